import { exports, env } from "cloudflare:workers";
import { inject, it, expect } from "vitest";
it("reaches node", async () => {
  const r = await fetch(inject("fleetUrl") + "/x");
  expect(await r.text()).toBe("from node /x");
  const w = await exports.default.fetch("http://x/");
  expect(await w.text()).toBe("hi");
  expect(env.CONFIG_REFRESH_MS).toBe("0");
});
