// Preloaded (`node --require`) into @modelcontextprotocol/server-everything's
// Streamable HTTP mode by tests/upstream_http.rs: the server calls
// `app.listen(PORT)`, which binds every interface; this binds it to
// 127.0.0.1 instead, and prints the port it got (`PORT=0` asks for a free
// one) as `LISTENING <port>` on stderr once it listens.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    args.splice(1, 0, "127.0.0.1");
  }
  this.once("listening", () => {
    const a = this.address();
    if (a && typeof a === "object") process.stderr.write(`LISTENING ${a.port}\n`);
  });
  return listen.apply(this, args);
};
