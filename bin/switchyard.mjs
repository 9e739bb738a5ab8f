#!/usr/bin/env node
// The CLI is TypeScript shared with the Worker (config schema, KV keys), so it runs
// through tsx instead of a separate build step.
import { register } from "tsx/esm/api";

register();
await import("../tools/cli/main.ts");
