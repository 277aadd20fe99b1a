// A small generic JeroMQ 0.3.6 peer (ZMTP 2.0) for trizmq's interop tests, the Java
// counterpart of tests/node/peer.js. It always exits by itself: --timeout bounds the run.
//
// Usage (options marked * may repeat):
//   java -cp jeromq.jar:BUILD Peer --type TYPE (--bind EP | --connect EP)*
//        [--identity ID] [--subscribe PREFIX]* [--send N [--body B]* [--interval MS]]
//        [--forever] [--recv N] [--echo N] [--timeout MS] [--stay]
//
// TYPE: push pull pub sub xpub xsub req rep dealer router pair.
// Output on stdout, one JSON object a line:
//   {"ready": ["tcp://127.0.0.1:40123", ...]}  once every bind/connect is done (a bind
//       to port 0 or * takes a free port, resolved here)
//   {"body": HEX, "frames": [HEX, ...]}           per received message (body: the last frame)
//   {"done": true}                                before a clean exit (code 0)
// A body may contain "{i}", replaced by the message's index (0-based); with several
// --body, the messages take them in turn.
// --send N: send N messages, --interval MS apart (default 0). With --forever, keep
//   sending until stdin closes (a publisher, which cannot know when a subscriber
//   has joined). With both --send and --recv, a request and its reply alternate (REQ,
//   DEALER): N sends, each followed by one receive.
// --recv N: print N received messages. --echo N: receive N messages and send each back
//   whole (a ROUTER's envelope included, so the reply goes to its sender).
// --stay: after the work, print {"done": true} and exit only when stdin closes.
// --subscribe: a SUB's prefixes (default: everything).
// Exit codes: 0 done, 2 bad arguments, 3 timeout, 1 any other error.

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.zeromq.ZMQ;

public final class Peer {
    private static final Map<String, Integer> TYPES = new HashMap<>();

    static {
        TYPES.put("pair", ZMQ.PAIR);
        TYPES.put("pub", ZMQ.PUB);
        TYPES.put("sub", ZMQ.SUB);
        TYPES.put("req", ZMQ.REQ);
        TYPES.put("rep", ZMQ.REP);
        TYPES.put("dealer", ZMQ.DEALER);
        TYPES.put("router", ZMQ.ROUTER);
        TYPES.put("pull", ZMQ.PULL);
        TYPES.put("push", ZMQ.PUSH);
        TYPES.put("xpub", ZMQ.XPUB);
        TYPES.put("xsub", ZMQ.XSUB);
    }

    private static volatile boolean stdinClosed = false;
    private static long deadline;

    private Peer() {}

    private static void usage(String message) {
        System.err.println("Peer: " + message);
        System.exit(2);
    }

    private static String hex(byte[] data) {
        StringBuilder out = new StringBuilder(data.length * 2);
        for (byte b : data) {
            out.append(String.format("%02x", b & 0xff));
        }
        return out.toString();
    }

    private static void out(String json) {
        System.out.println(json);
        System.out.flush();
    }

    private static void checkTime() {
        if (System.currentTimeMillis() > deadline) {
            System.err.println("Peer: timeout");
            System.exit(3);
        }
    }

    /** One whole message (every frame), or exit 3 at the deadline. */
    private static List<byte[]> receive(ZMQ.Socket socket) {
        List<byte[]> frames = new ArrayList<>();
        while (true) {
            byte[] frame = socket.recv();
            if (frame == null) {
                if (!frames.isEmpty()) {
                    continue; // the rest of a message already begun is on its way
                }
                checkTime();
                continue;
            }
            frames.add(frame);
            if (!socket.hasReceiveMore()) {
                return frames;
            }
        }
    }

    private static void print(List<byte[]> frames) {
        StringBuilder json = new StringBuilder("{\"body\": \"");
        json.append(hex(frames.get(frames.size() - 1))).append("\", \"frames\": [");
        for (int i = 0; i < frames.size(); i++) {
            json.append(i == 0 ? "\"" : ", \"").append(hex(frames.get(i))).append('"');
        }
        out(json.append("]}").toString());
    }

    private static void sendAll(ZMQ.Socket socket, List<byte[]> frames) {
        for (int i = 0; i < frames.size(); i++) {
            boolean more = i < frames.size() - 1;
            if (!socket.send(frames.get(i), more ? ZMQ.SNDMORE : 0)) {
                System.err.println("Peer: send failed");
                System.exit(1);
            }
        }
    }

    private static byte[] body(List<String> bodies, int i) {
        String template = bodies.get(i % bodies.size());
        return template.replace("{i}", Integer.toString(i)).getBytes(StandardCharsets.UTF_8);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException exc) {
            Thread.currentThread().interrupt();
        }
    }

    public static void main(String[] argv) {
        Map<String, String> args = new HashMap<>();
        List<String> binds = new ArrayList<>();
        List<String> connects = new ArrayList<>();
        List<String> subscriptions = new ArrayList<>();
        List<String> bodies = new ArrayList<>();
        for (int i = 0; i < argv.length; i++) {
            String arg = argv[i];
            if (!arg.startsWith("--")) {
                usage("unexpected argument " + arg);
            }
            String key = arg.substring(2);
            if (key.equals("forever") || key.equals("stay")) {
                args.put(key, "1");
                continue;
            }
            if (i + 1 >= argv.length) {
                usage(arg + " needs a value");
            }
            String value = argv[++i];
            if (key.equals("bind")) {
                binds.add(value);
            } else if (key.equals("connect")) {
                connects.add(value);
            } else if (key.equals("subscribe")) {
                subscriptions.add(value);
            } else if (key.equals("body")) {
                bodies.add(value);
            } else {
                args.put(key, value);
            }
        }
        Integer type = TYPES.get(args.getOrDefault("type", ""));
        if (type == null) {
            usage("--type must be one of " + TYPES.keySet());
        }
        if (binds.isEmpty() && connects.isEmpty()) {
            usage("give --bind or --connect");
        }
        deadline = System.currentTimeMillis() + Long.parseLong(args.getOrDefault("timeout", "8000"));
        int send = Integer.parseInt(args.getOrDefault("send", "0"));
        int recv = Integer.parseInt(args.getOrDefault("recv", "0"));
        int echo = Integer.parseInt(args.getOrDefault("echo", "0"));
        long interval = Long.parseLong(args.getOrDefault("interval", "0"));
        if (bodies.isEmpty()) {
            bodies.add("message {i}");
        }

        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() != -1) {
                    // nothing is read from stdin but its end
                }
            } catch (java.io.IOException exc) {
                // a closed stdin ends the wait as its end does
            }
            stdinClosed = true;
        });
        stdin.setDaemon(true);
        stdin.start();

        ZMQ.Context context = ZMQ.context(1);
        ZMQ.Socket socket = context.socket(type);
        socket.setLinger(1000);
        socket.setReceiveTimeOut(100);
        if (args.containsKey("identity")) {
            socket.setIdentity(args.get("identity").getBytes(StandardCharsets.UTF_8));
        }
        if (type == ZMQ.SUB) {
            if (subscriptions.isEmpty()) {
                subscriptions.add("");
            }
            for (String prefix : subscriptions) {
                socket.subscribe(prefix.getBytes(StandardCharsets.UTF_8));
            }
        }
        List<String> ready = new ArrayList<>();
        for (String endpoint : binds) {
            if (endpoint.endsWith(":0") || endpoint.endsWith(":*")) {
                String host = endpoint.substring(0, endpoint.lastIndexOf(':'));
                int port = socket.bindToRandomPort(host);
                ready.add(host + ":" + port);
            } else {
                socket.bind(endpoint);
                ready.add(endpoint);
            }
        }
        for (String endpoint : connects) {
            socket.connect(endpoint);
            ready.add(endpoint);
        }
        StringBuilder line = new StringBuilder("{\"ready\": [");
        for (int i = 0; i < ready.size(); i++) {
            line.append(i == 0 ? "\"" : ", \"").append(ready.get(i)).append('"');
        }
        out(line.append("]}").toString());

        if (send > 0 && recv > 0 && !args.containsKey("forever")) {
            // a request and its reply, in turn
            for (int i = 0; i < send; i++) {
                List<byte[]> request = new ArrayList<>();
                if (type == ZMQ.DEALER) {
                    request.add(new byte[0]); // the envelope's delimiter, as a REQ puts it
                }
                request.add(body(bodies, i));
                sendAll(socket, request);
                if (i < recv) {
                    print(receive(socket));
                }
            }
        } else {
            for (int i = 0; i < send || args.containsKey("forever"); i++) {
                if (args.containsKey("forever") && stdinClosed) {
                    break;
                }
                checkTime();
                List<byte[]> message = new ArrayList<>();
                message.add(body(bodies, i));
                sendAll(socket, message);
                if (interval > 0) {
                    sleep(interval);
                }
            }
            for (int i = 0; i < recv; i++) {
                print(receive(socket));
            }
        }
        for (int i = 0; i < echo; i++) {
            List<byte[]> message = receive(socket);
            print(message);
            sendAll(socket, message);
        }
        out("{\"done\": true}");
        if (args.containsKey("stay")) {
            while (!stdinClosed) {
                checkTime();
                sleep(10);
            }
        }
        socket.close();
        context.term();
        System.exit(0);
    }
}
