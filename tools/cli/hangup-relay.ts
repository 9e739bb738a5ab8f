/**
 * The relay `switchyard serve` puts in front of the Worker's direct socket (`--direct`
 * leaves it out): a TCP pipe from the port users call that turns a client's orderly
 * close (FIN) into a connection reset (RST) toward workerd.
 *
 * Why: workerd 1.20261023 hears a client's hang-up before the response headers only as
 * a connection error; a FIN (how most clients hang up) is never delivered, so the router
 * goes on trying replicas for a client that left (docs/routing.md, "Client disconnect").
 * A reset fires `request.signal` at once. The price is one more hop through Node for
 * every byte: measured on the 2-core dev machine, none in req/s at 16 connections (the
 * relay runs beside workerd) and ~0.09 ms a request one at a time. A client that
 * half-closes on purpose and still waits for its answer (rare for HTTP: `nc -N`) loses
 * the answer through it; `--direct` serves it.
 */
import net from "node:net";

export interface HangupRelay {
  /** Origin users call, e.g. http://127.0.0.1:8787. */
  url: string;
  close(): Promise<void>;
}

export async function startHangupRelay(listen: { host: "127.0.0.1"; port: number }, worker: URL): Promise<HangupRelay> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    const upstream = net.connect({ host: worker.hostname, port: Number(worker.port), noDelay: true });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    }
    client.pipe(upstream, { end: false });
    upstream.pipe(client);
    // The client is done: a FIN (end) or a broken connection both mean it left. workerd
    // only hears a reset.
    const reset = () => {
      if (!upstream.destroyed) upstream.resetAndDestroy();
    };
    client.on("end", reset);
    client.on("error", reset);
    client.on("close", reset);
    upstream.on("error", () => client.destroy());
    upstream.on("close", () => {
      if (!client.destroyed) client.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://${listen.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
