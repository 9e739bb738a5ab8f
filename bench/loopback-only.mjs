/**
 * Preloaded into the Portkey gateway's process (node --import): its start-server.js
 * takes no host option and listens on every interface, while everything the bench
 * starts listens on 127.0.0.1 only. It calls `server.listen(port, undefined, cb)`
 * (@hono/node-server); a listen with a port and no host is pinned to 127.0.0.1 here.
 */
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" && (args[1] === undefined || typeof args[1] === "function")) {
    if (args[1] === undefined) args[1] = "127.0.0.1";
    else args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
