/**
 * The bench's fake OpenAI upstream in its own Node process (started by bench/upstream.ts),
 * so the load generator and the upstream do not share one event loop. Prints
 * `{"port":N}` once listening and serves until its stdin closes (the parent exited or
 * is done) or it gets SIGTERM.
 */
import { startFakeOpenAI } from "../tools/fakes/fake-openai";

const server = await startFakeOpenAI({ id: "up" });
let closing = false;
const stop = () => {
  if (closing) return;
  closing = true;
  void server.close().finally(() => process.exit(0));
};
process.stdin.on("end", stop).on("error", stop).resume();
process.on("SIGTERM", stop);
process.on("SIGINT", () => {}); // the parent's Ctrl-C reaches us too; the parent decides when we stop
process.stdout.write(`${JSON.stringify({ port: server.port })}\n`);
