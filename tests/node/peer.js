#!/usr/bin/env node
// A small generic libzmq peer (zeromq.js 6, libzmq 4.3.5 with draft sockets) for
// trizmq's interop tests. It always exits by itself: --timeout bounds the run.
//
// Usage (options may repeat where marked *):
//   node tests/node/peer.js --type TYPE (--bind EP | --connect EP)* [--join GROUP]*
//        [--send N [--group G | --group-hex HEX] [--body B | --body-hex HEX]
//         [--interval MS] [--forever] [--routing-id ID]]
//        [--recv N] [--echo N] [--timeout MS] [--settle MS] [--after MS] [--stay]
//        [--subscribe PREFIX]* [--plain-server | --plain-user U --plain-password P]
//        [--curve-secret Z85 --curve-public Z85 [--curve-server-key Z85]] [--identity ID]
//        [--heartbeat IVL_MS,TIMEOUT_MS]
//
// TYPE: radio dish client server scatter gather (draft), pub sub push pull pair
//       dealer router req rep.
// Output on stdout, one JSON object a line:
//   {"ready": ["tcp://127.0.0.1:40123", ...]}  after every bind/connect is done
//   {"group": HEX, "body": HEX, "routing_id": N}  per received message (group on
//       dish only, routing_id on server only; "frames": [HEX...] for multipart)
//   {"done": true}                              before a clean exit (code 0)
// A body may contain "{i}", replaced by the message's index (0-based).
// --send N: send N messages, --interval MS apart (default 20); with --forever keep
//   sending until the timeout, which then counts as success.
// --recv N: print N received messages, then exit. With both --send and --recv, the
//   sending runs first (client request/reply) unless --forever is given.
// --echo N: receive N messages and send each body back (server: to its sender).
// --after MS: wait this long after the last send before exiting (default 100).
// --stay: print {"done": true} at once, then exit (0) only when stdin closes, so a
//   caller that has read everything it expects lets the peer go (no flush race).
// --subscribe: a SUB's prefixes (default: everything). --plain-server makes the
//   socket a PLAIN server, with a ZAP handler that admits every client;
//   --plain-user/--plain-password make it a PLAIN client. --curve-secret/--curve-public
//   (Z85) make it a CURVE server, or with --curve-server-key a CURVE client.
//   --identity: its routing id.
// --heartbeat IVL_MS,TIMEOUT_MS: libzmq's ZMQ_HEARTBEAT_IVL and ZMQ_HEARTBEAT_TIMEOUT
//   (over ws://, WebSocket PINGs that the peer must answer with PONGs).
// Endpoints may be tcp://, ipc:// or ws:// (libzmq's draft WebSocket transport).
// Exit codes: 0 done, 2 bad arguments, 3 timeout, 1 any other error.
"use strict"

process.removeAllListeners("warning") // the "draft features are experimental" notice

const zmq = require("zeromq")
const draft = require("zeromq/draft")

const TYPES = {
  radio: draft.Radio,
  dish: draft.Dish,
  client: draft.Client,
  server: draft.Server,
  scatter: draft.Scatter,
  gather: draft.Gather,
  pub: zmq.Publisher,
  sub: zmq.Subscriber,
  push: zmq.Push,
  pull: zmq.Pull,
  pair: zmq.Pair,
  dealer: zmq.Dealer,
  router: zmq.Router,
  req: zmq.Request,
  rep: zmq.Reply,
}
const REPEATABLE = new Set(["bind", "connect", "join", "subscribe"])
const FLAGS = new Set(["forever", "stay", "plain-server"])

function usage(message) {
  process.stderr.write(`peer.js: ${message}\n`)
  process.exit(2)
}

function parse(argv) {
  const args = { bind: [], connect: [], join: [], subscribe: [] }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (!arg.startsWith("--")) usage(`unexpected argument ${arg}`)
    const key = arg.slice(2)
    if (FLAGS.has(key)) {
      args[key] = true
      continue
    }
    if (i + 1 >= argv.length) usage(`${arg} needs a value`)
    const value = argv[++i]
    if (REPEATABLE.has(key)) args[key].push(value)
    else args[key] = value
  }
  if (!TYPES[args.type]) usage(`--type must be one of ${Object.keys(TYPES).join(" ")}`)
  if (!args.bind.length && !args.connect.length) usage("give --bind or --connect")
  return args
}

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n")
}

function bytesArg(args, name, fallback) {
  if (args[`${name}-hex`] !== undefined) return Buffer.from(args[`${name}-hex`], "hex")
  if (args[name] !== undefined) return args[name]
  return fallback
}

function bodyFor(template, i) {
  return Buffer.isBuffer(template) ? template : Buffer.from(template.replace("{i}", String(i)))
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

function stdinClosed() {
  return new Promise(resolve => {
    process.stdin.on("end", resolve)
    process.stdin.on("close", resolve)
    process.stdin.on("error", resolve)
    process.stdin.resume()
  })
}

// A ZAP handler (RFC 27) that admits every client: a PLAIN server needs one.
async function admitEveryone() {
  const zap = new zmq.Reply()
  await zap.bind("inproc://zeromq.zap.01")
  ;(async () => {
    for await (const [version, id] of zap) {
      await zap.send([version, id, "200", "OK", "user", ""])
    }
  })()
}

async function main() {
  const args = parse(process.argv.slice(2))
  const timeout = Number(args.timeout ?? 10000)
  const timer = setTimeout(() => {
    if (args.forever) {
      out({ done: true })
      process.exit(0)
    }
    process.stderr.write(`peer.js: timed out after ${timeout} ms\n`)
    process.exit(3)
  }, timeout)

  const type = args.type
  const options = { linger: 1000 }
  if (args["plain-server"]) {
    options.plainServer = true
    await admitEveryone()
  }
  if (args["plain-user"] !== undefined) {
    options.plainUsername = args["plain-user"]
    options.plainPassword = args["plain-password"] ?? ""
  }
  if (args["curve-secret"] !== undefined) {
    options.curveSecretKey = args["curve-secret"]
    options.curvePublicKey = args["curve-public"]
    if (args["curve-server-key"] !== undefined) options.curveServerKey = args["curve-server-key"]
    else options.curveServer = true
  }
  if (args.identity !== undefined) options.routingId = args.identity
  if (args.heartbeat !== undefined) {
    const [ivl, timeout] = args.heartbeat.split(",").map(Number)
    options.heartbeatInterval = ivl
    options.heartbeatTimeout = timeout
  }
  const sock = new TYPES[type](options)
  if (type === "sub") {
    if (args.subscribe.length) for (const prefix of args.subscribe) sock.subscribe(prefix)
    else sock.subscribe()
  }
  for (const group of args.join) sock.join(group)
  const ready = []
  for (const ep of args.bind) {
    await sock.bind(ep)
    ready.push(ep.startsWith("tcp://") ? sock.lastEndpoint : ep)
  }
  for (const ep of args.connect) {
    sock.connect(ep)
    ready.push(ep)
  }
  out({ ready })
  if (args.settle) await sleep(Number(args.settle))

  const sendCount = Number(args.send ?? 0)
  const recvCount = Number(args.recv ?? 0)
  const echoCount = Number(args.echo ?? 0)
  const interval = Number(args.interval ?? 20)
  const group = bytesArg(args, "group", "")
  const body = bytesArg(args, "body", "msg {i}")

  async function sendOne(i) {
    const payload = bodyFor(body, i)
    if (type === "radio") await sock.send(payload, { group })
    else if (type === "server") await sock.send(payload, { routingId: Number(args["routing-id"]) })
    else await sock.send(payload)
  }

  function report(received) {
    const [first, second] = received
    if (type === "dish") {
      out({ group: Buffer.from(second.group).toString("hex"), body: first.toString("hex") })
    } else if (type === "server") {
      out({ routing_id: second.routingId, body: first.toString("hex") })
    } else if (received.length === 1) {
      out({ body: first.toString("hex") })
    } else {
      out({ frames: received.map(f => Buffer.from(f).toString("hex")) })
    }
  }

  async function sending() {
    for (let i = 0; args.forever || i < sendCount; i++) {
      await sendOne(i)
      if (interval) await sleep(interval)
    }
  }

  async function receiving() {
    for (let i = 0; i < recvCount; i++) report(await sock.receive())
  }

  if (args.forever) {
    // keep sending until the timeout; a --recv alongside still runs
    sending()
    await receiving()
    if (recvCount) {
      out({ done: true })
      process.exit(0)
    }
    return
  }
  await sending()
  await receiving()
  for (let i = 0; i < echoCount; i++) {
    const received = await sock.receive()
    report(received)
    if (type === "server") await sock.send(received[0], { routingId: received[1].routingId })
    else await sock.send(received)
  }
  if (args.stay) {
    // report, then stay until stdin closes: the caller has what it needs by then,
    // so no message is lost to an exit before libzmq flushed it
    out({ done: true })
    await stdinClosed()
    clearTimeout(timer)
    sock.close()
    process.exit(0)
  }
  await sleep(Number(args.after ?? 100)) // let the last messages leave
  clearTimeout(timer)
  sock.close()
  out({ done: true })
  process.exit(0)
}

main().catch(err => {
  process.stderr.write(`peer.js: ${err && err.stack ? err.stack : err}\n`)
  process.exit(1)
})
