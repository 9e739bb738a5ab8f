import type http from "node:http";
import type { AddressInfo } from "node:net";

/** Starts `server` on 127.0.0.1 (port 0: a free one) and resolves with the port it got. Fake model servers never listen beyond loopback. */
export async function listenOnLoopback(server: http.Server, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

export const FAKE_MAX_BODY_BYTES = 16 * 1024 * 1024; // far above any test prompt; stops a runaway client from eating a fake's memory

/**
 * A request's body as UTF-8 text. Past `maxBytes` the request is destroyed (a runaway
 * client must not eat a fake server's memory). A client that disconnects mid-body never
 * sends 'end': what arrived is returned, and parsing it fails where a caller parses.
 */
export function readBody(req: http.IncomingMessage, maxBytes = Number.POSITIVE_INFINITY): Promise<string> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    let size = 0;
    const done = () => resolve(Buffer.concat(parts).toString("utf8"));
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > maxBytes) req.destroy(new Error("body too large"));
      else parts.push(c);
    });
    req.on("end", done);
    req.on("close", done);
    req.on("error", () => {}); // 'close' follows and resolves
  });
}
