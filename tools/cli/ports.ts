import net from "node:net";

/** Whether something can listen on host:port right now (a hint, not a reservation). */
export function isPortFree(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** A port the OS just handed out; racy by nature, good enough for local dev servers. */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** `preferred` if it is free, otherwise any free port. */
export async function preferPort(preferred: number, host = "127.0.0.1"): Promise<number> {
  return (await isPortFree(preferred, host)) ? preferred : freePort(host);
}
