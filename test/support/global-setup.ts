import http from "node:http";
import type { TestProject } from "vitest/node";
export default async function setup(project: TestProject) {
  const srv = http.createServer((req, res) => { res.end("from node " + req.url); });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  project.provide("fleetUrl", `http://127.0.0.1:${(srv.address() as any).port}`);
  return async () => { srv.close(); };
}
