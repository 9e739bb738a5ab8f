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
