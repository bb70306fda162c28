// A receiver typed by the module's event schema alone: events.d.ts is
// generated from module.schema.json (the document the API serves) by
// json-schema-to-typescript. Each member read below has the type the
// module's fields give it, and the switch must cover exactly the event
// types the document has: a schema that types a field wrongly, or misses
// or invents a type, fails the build. The run prints one line per body
// (given as a JSON array in BODIES), which the test compares.
import type { WebhookEvent } from "./events.js";

declare const process: { env: Record<string, string | undefined> };

function describe(body: WebhookEvent): string {
  switch (body.event) {
    case "record_created":
    case "record_deleted":
    case "record_snapshot": {
      const title: string = body.record.fields.title; // required
      const count: number | undefined = body.record.fields.count;
      const size: "s" | "m" | undefined = body.record.fields.size;
      const stage: "new" | "paid" | "shipped" | undefined = body.record.fields.stage;
      return `${body.event} ${title} count=${count ?? "-"} size=${size ?? "-"} stage=${stage ?? "-"} v${body.record.version}`;
    }
    case "record_updated":
      return `${body.event} ${Object.keys(body.changes.fields).sort().join(",")}`;
    case "status_change": {
      const s = body.status;
      if (s.field === "stage") {
        const to: "new" | "paid" | "shipped" | null = s.to;
        return `${body.event} stage ${s.from ?? "null"}->${to ?? "null"}`;
      }
      const to: "open" | "closed" | null = s.to;
      return `${body.event} review ${s.from ?? "null"}->${to ?? "null"}`;
    }
    case "custom_data_updated":
      return `${body.event} ${Object.keys(body.changes.custom_data.to).sort().join(",")}`;
    case "endpoint_disabled": {
      const reason: "gone" | "failing" | "manual" = body.reason;
      return `${body.event} ${reason}`;
    }
    default: {
      const unknown: never = body;
      return `unknown ${JSON.stringify(unknown)}`;
    }
  }
}

const bodies: WebhookEvent[] = JSON.parse(process.env.BODIES ?? "[]");
for (const body of bodies) {
  console.log(describe(body));
}
