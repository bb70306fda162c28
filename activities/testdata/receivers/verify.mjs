// Verifies webhook deliveries with the receivers' own libraries, the npm
// packages standardwebhooks and svix, for activities' tests.
//
// stdin: a JSON array of cases
//   {"secret": "whsec_...", "raw": false, "headers": {"Webhook-Id": "..."}, "body_base64": "..."}
// where raw hands the library the secret's UTF-8 bytes ({format: "raw"})
// instead of the "whsec_<base64>" form it decodes by default.
// stdout: a JSON array, one verdict per case
//   {"standardwebhooks": "ok" | "<error>", "svix": "ok" | "<error>"}
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';

const libraries = { standardwebhooks: StandardWebhook, svix: SvixWebhook };

function verdict(Library, c) {
  try {
    const options = c.raw ? { format: 'raw' } : undefined;
    new Library(c.secret, options).verify(Buffer.from(c.body_base64, 'base64'), c.headers);
    return 'ok';
  } catch (err) {
    return String(err && err.message ? err.message : err) || 'failed';
  }
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const out = cases.map((c) => Object.fromEntries(
  Object.entries(libraries).map(([name, Library]) => [name, verdict(Library, c)]),
));
process.stdout.write(JSON.stringify(out) + '\n');
