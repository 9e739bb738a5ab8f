import type { Env as RouterEnv } from "../src/platform/env";
declare global {
  namespace Cloudflare {
    interface Env extends RouterEnv {
      /** A second router Worker on the same Durable Objects and KV (vitest.config.ts): another isolate. */
      ROUTER_B: Fetcher;
    }
    interface GlobalProps {
      mainModule: typeof import("../src/index");
    }
  }
}
declare module "vitest" {
  export interface ProvidedContext {
    /** Base URL of the fake model-server fleet's control API (test/support/global-setup.ts). */
    fleetUrl: string;
  }
}
