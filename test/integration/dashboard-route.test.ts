/**
 * The dashboard's routes in workerd: they exist only while ADMIN_TOKEN is set (as every
 * admin route), need no config and no credential (they hold no data), and carry a policy
 * that lets the page run only the router's own script. What the page shows is tested in a
 * browser (test/e2e/dashboard.test.ts).
 */
import { describe, expect, it } from "vitest";
import { isolateFetch } from "../support/router";

describe("GET /dashboard and /dashboard/app.js", () => {
  it.each(["/dashboard", "/dashboard/app.js"])("%s does not exist (404) while ADMIN_TOKEN is unset", async (path) => {
    const res = await isolateFetch(path, {}, { ADMIN_TOKEN: undefined });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "not_found" } });
  });

  it.each([
    ["/dashboard", "text/html"],
    ["/dashboard/app.js", "text/javascript"],
  ])("%s answers %s without a credential, under a script-src 'self' policy, holding no secret", async (path, type) => {
    const res = await isolateFetch(path, {}, {});
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain(type);
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.text()).not.toContain("test-admin-token");
  });
});
