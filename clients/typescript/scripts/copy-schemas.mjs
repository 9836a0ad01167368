// Copies the Avro schema an intent is written with from the one copy in the repository
// (schemas/src/main/avro) into the package, so that the package carries it.
import { copyFileSync, mkdirSync } from 'node:fs';
const from = new URL('../../../schemas/src/main/avro/ToolIntent.avsc', import.meta.url);
const to = new URL('../dist/schemas/', import.meta.url);
mkdirSync(to, { recursive: true });
copyFileSync(from, new URL('ToolIntent.avsc', to));
