// A TypeScript client of recordhub made from api/openapi.yaml alone: the
// types come from openapi-typescript (schema.d.ts, generated), the calls
// from openapi-fetch. It creates a module and a record, reads the record
// back and lists the module's records, and prints what it got as JSON
// lines; a type error anywhere here fails the build, a wrong route or
// member fails the run.
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

declare const process: { env: Record<string, string | undefined>; exitCode?: number };

const api = createClient<paths>({
  baseUrl: process.env.RECORDHUB_API_URL,
  headers: { Authorization: `Bearer ${process.env.RECORDHUB_ADMIN_KEY}` },
});

function fail(what: string, error: unknown): never {
  throw new Error(`${what}: ${JSON.stringify(error)}`);
}

const mod = await api.POST("/api/admin/modules", {
  body: {
    slug: "orders",
    name: "Orders",
    fields: [
      { name: "title", type: "string", required: true },
      { name: "amount", type: "number" },
    ],
  },
});
if (!mod.data) fail("create module", mod.error);
const moduleId: string = mod.data.id;

const created = await api.POST("/api/modules/{id}/records", {
  params: { path: { id: moduleId } },
  body: { fields: { title: "Desk", amount: 120 } },
});
if (!created.data) fail("create record", created.error);

const read = await api.GET("/api/modules/{id}/records/{recordId}", {
  params: { path: { id: moduleId, recordId: created.data.id } },
});
if (!read.data) fail("get record", read.error);

const list = await api.GET("/api/modules/{id}/records", {
  params: { path: { id: moduleId }, query: { limit: 10, sort: "-created_at" } },
});
if (!list.data) fail("list records", list.error);

const missing = await api.GET("/api/modules/{id}/records/{recordId}", {
  params: { path: { id: moduleId, recordId: "rec_00000000000000000000000000" } },
});

console.log(JSON.stringify({ module: mod.data.slug, record: read.data.fields, version: read.data.version }));
console.log(JSON.stringify({ listed: list.data.data.length, total: list.data.total }));
console.log(JSON.stringify({ status: missing.response.status, error: missing.error?.error }));
