// The rocketmq adapter's broker: BrokerStartup's broker in this JVM, driven step by step on a logical
// clock over a loopback line protocol (one JSON object a line each way). Compiled by the adapter
// (server.py) against the release's jars; run as the broker's main class with
// -Dmqc.control=<file> (the control port is written there once the broker has booted).
//
// What it changes in the broker, and nothing else:
//  * three clock reads, rewritten with javassist before the classes load: System.currentTimeMillis()
//    in RequestTask (createTimestamp) and BrokerFastFailure (a request's time in queue), and
//    SystemClock.now() in DefaultMessageStore#isOSPageCacheBusy, read Clock.now() (the logical
//    instant once a reset set it);
//  * BrokerFastFailure's own schedule is shut down; the adapter runs the broker's tick body (the
//    Runnable BrokerFastFailure#start schedules, with its brokerFastFailureEnable gate) at the tick
//    instants of the logical clock;
//  * the one send thread and the one pull thread each run a holder task: a request leaves its queue
//    only when the adapter says take (the holder polls the head and runs it, as a pool worker does),
//    or by the tick;
//  * a put-lock hold is the commit log's beginTimeInLock (what isOSPageCacheBusy reads) set to the
//    logical instant the hold began; 0 when released (a put run meanwhile resets it: it is restored);
//  * the queue capacities a reset names are set on the executors' LinkedBlockingQueues.
// The requests themselves are the remoting protocol's SEND_MESSAGE and PULL_MESSAGE, sent by a
// NettyRemotingClient in this JVM to the broker's listen port, so they pass processRequestCommand
// (rejectRequest, OVERLOAD) as any client's do; answers are what that client receives.
//
//   {"op":"reset","scan_start_ms":S,"scan_period_ms":10,"enabled":true,"busy_after_ms":B,
//    "queues":{"send":{"wait_ms":W,"capacity":C},"pull":{...}}}     logical time 0, queues empty
//   {"op":"submit","queue":"send"|"pull","id":"r1"}   -> {"result":"queued"|"OVERLOAD"|other remark tag}
//   {"op":"take","queue":"send"}                      -> {"result":"r1"|null}
//   {"op":"lock","held":true}                          {"op":"advance","ms":N}
//   {"op":"request","id":"r1"}                        -> {"result":null|{answer,at_ms,text,code}}
//   {"op":"state"}                                    -> queue contents, clock, hold (a debugging aid)
package mqconform.rocketmq;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javassist.CannotCompileException;
import javassist.ClassPool;
import javassist.CtClass;
import javassist.CtMethod;
import javassist.LoaderClassPath;
import javassist.expr.ExprEditor;
import javassist.expr.MethodCall;

public final class BrokerDriver {
    static final String TOPIC = "mqconform-admission";
    static final String GROUP = "mqconform-admission";
    static final long ANSWER_TIMEOUT_MS = 10000;
    static final long RPC_TIMEOUT_MS = 120000;
    static final Pattern TAG = Pattern.compile("^\\[([A-Z_]+)\\]");
    static final Object NONE = new Object();

    static Object controller;
    static Object client;
    static String brokerAddr;
    static Runnable tick;
    static final Map<String, Holder> holders = new HashMap<>();
    static final Map<String, BlockingQueue<Runnable>> queues = new HashMap<>();
    static final Map<String, Integer> defaultCapacity = new HashMap<>();
    static Object commitLog;
    static Field beginTimeInLock;
    static Field requestOfTask;
    static Method castRunnable;
    static long base;
    static long now;
    static long scanStart;
    static long scanPeriod = 10;
    static Long holdBegin;
    static int patched;
    /** the requests of the current reset, by id and by remoting opaque */
    static final Map<String, Req> byId = new ConcurrentHashMap<>();
    static final Map<Integer, Req> byOpaque = new ConcurrentHashMap<>();

    static final class Req {
        final String id;
        final String queue;
        volatile int opaque;
        volatile boolean taken;
        volatile Integer code;
        volatile String remark;
        volatile long atMs = -1;

        Req(String id, String queue) {
            this.id = id;
            this.queue = queue;
        }

        synchronized void answered(Object response) throws Exception {
            if (code != null || response == null) return;
            remark = (String) response.getClass().getMethod("getRemark").invoke(response);
            atMs = now;
            code = (Integer) response.getClass().getMethod("getCode").invoke(response);
        }

        JSONObject answer() {
            Integer c = code;
            if (c == null) return null;
            JSONObject a = new JSONObject();
            a.put("at_ms", atMs);
            Matcher m = TAG.matcher(remark == null ? "" : remark);
            if (taken && c != 1 && c != 2) {
                a.put("answer", "processed");
                a.put("text", null);
                a.put("code", null);
            } else {
                a.put("answer", c == 2 && m.find() ? m.group(1) : "code " + c);
                a.put("text", remark);
                a.put("code", c);
            }
            return a;
        }
    }

    /** Runs on a pool's one worker thread for good: takes the queue's head only when told to. */
    static final class Holder implements Runnable {
        final BlockingQueue<Runnable> queue;
        final SynchronousQueue<Boolean> go = new SynchronousQueue<>();
        final SynchronousQueue<Object> took = new SynchronousQueue<>();
        volatile boolean running;
        /** free: runs every request as it comes, as the pool's worker does (the queues of the delivery
         *  area); held: only at a take (an admission) */
        volatile boolean free;
        /** in a free poll (or about to read free): a reset waits until it is out */
        volatile boolean polling;

        Holder(BlockingQueue<Runnable> queue) {
            this.queue = queue;
        }

        public void run() {
            running = true;
            while (true) {
                try {
                    polling = true;  // before reading free: a reset that saw polling false sees no poll
                    if (free) {
                        Runnable r = queue.poll(20, TimeUnit.MILLISECONDS);
                        if (r != null) r.run();
                        polling = false;
                        continue;
                    }
                    polling = false;
                    if (go.poll(20, TimeUnit.MILLISECONDS) == null) continue;
                    Runnable r = queue.poll();
                    took.put(r == null ? NONE : r);
                    if (r != null) r.run();
                } catch (InterruptedException e) {
                    return;
                } catch (Throwable e) {
                    e.printStackTrace();
                }
            }
        }

        Runnable take() throws InterruptedException {
            go.put(Boolean.TRUE);
            Object r = took.take();
            return r == NONE ? null : (Runnable) r;
        }
    }

    public static void main(String[] args) throws Exception {
        patch();
        Class<?> startup = Class.forName("org.apache.rocketmq.broker.BrokerStartup");
        Method create = startup.getDeclaredMethod("createBrokerController", String[].class);
        create.setAccessible(true);
        controller = create.invoke(null, (Object) args);
        Class<?> controllerClass = Class.forName("org.apache.rocketmq.broker.BrokerController");
        startup.getMethod("start", controllerClass).invoke(null, controller);
        takeControl(controllerClass);
        serve();
    }

    // ------------------------------------------------------------------ set-up
    static void patch() throws Exception {
        ClassLoader loader = BrokerDriver.class.getClassLoader();
        ClassPool pool = new ClassPool(false);
        pool.appendClassPath(new LoaderClassPath(loader));
        define(loader, redirect(pool.get("org.apache.rocketmq.remoting.netty.RequestTask"), null,
                                "java.lang.System", "currentTimeMillis"));
        define(loader, redirect(pool.get("org.apache.rocketmq.broker.latency.BrokerFastFailure"), null,
                                "java.lang.System", "currentTimeMillis"));
        define(loader, redirect(pool.get("org.apache.rocketmq.store.DefaultMessageStore"), "isOSPageCacheBusy",
                                "org.apache.rocketmq.common.SystemClock", "now"));
        if (patched < 3) throw new IllegalStateException("only " + patched + " clock reads found to redirect");
    }

    static CtClass redirect(CtClass c, String method, String owner, String name) throws Exception {
        ExprEditor editor = new ExprEditor() {
            public void edit(MethodCall call) throws CannotCompileException {
                if (call.getClassName().equals(owner) && call.getMethodName().equals(name)) {
                    call.replace("$_ = mqconform.rocketmq.Clock.now();");
                    patched++;
                }
            }
        };
        if (method == null) {
            c.instrument(editor);
        } else {
            for (CtMethod m : c.getDeclaredMethods()) {
                if (m.getName().equals(method)) m.instrument(editor);
            }
        }
        return c;
    }

    static void define(ClassLoader loader, CtClass c) throws Exception {
        byte[] bytes = c.toBytecode();
        Method define = ClassLoader.class.getDeclaredMethod("defineClass", String.class, byte[].class, int.class,
                                                           int.class, java.security.ProtectionDomain.class);
        define.setAccessible(true);
        define.invoke(loader, c.getName(), bytes, 0, bytes.length, BrokerDriver.class.getProtectionDomain());
    }

    @SuppressWarnings("unchecked")
    static void takeControl(Class<?> controllerClass) throws Exception {
        Object config = call(controller, "getBrokerConfig");
        Object fastFailure = field(controllerClass, "brokerFastFailure").get(controller);
        call(fastFailure, "shutdown");
        Class<?> tickClass = Class.forName("org.apache.rocketmq.broker.latency.BrokerFastFailure$1");
        Constructor<?> ctor = tickClass.getDeclaredConstructors()[0];
        ctor.setAccessible(true);
        Object[] ctorArgs = new Object[ctor.getParameterCount()];
        for (int i = 0; i < ctorArgs.length; i++) {
            Class<?> t = ctor.getParameterTypes()[i];
            ctorArgs[i] = t.isInstance(fastFailure) ? fastFailure : t.isInstance(config) ? config : null;
        }
        tick = (Runnable) ctor.newInstance(ctorArgs);
        castRunnable = fastFailure.getClass().getMethod("castRunnable", Runnable.class);
        requestOfTask = field(Class.forName("org.apache.rocketmq.remoting.netty.RequestTask"), "request");

        Object store = call(controller, "getMessageStore");
        commitLog = call(store, "getCommitLog");
        beginTimeInLock = field(commitLog.getClass(), "beginTimeInLock");

        Class<?> topicConfig = Class.forName("org.apache.rocketmq.common.TopicConfig");
        Object topic = topicConfig.getConstructor(String.class, int.class, int.class, int.class)
            .newInstance(TOPIC, 1, 1, 6);
        Object topics = call(controller, "getTopicConfigManager");
        topics.getClass().getMethod("updateTopicConfig", topicConfig).invoke(topics, topic);

        queues.put("send", (BlockingQueue<Runnable>) call(controller, "getSendThreadPoolQueue"));
        queues.put("pull", (BlockingQueue<Runnable>) call(controller, "getPullThreadPoolQueue"));
        Field capacity = field(LinkedBlockingQueue.class, "capacity");
        for (String name : queues.keySet()) defaultCapacity.put(name, capacity.getInt(queues.get(name)));
        hold("send", (ExecutorService) call(controller, "getSendMessageExecutor"));
        hold("pull", (ExecutorService) call(controller, "getPullMessageExecutor"));

        int port = (Integer) call(config, "getListenPort");
        String host = (String) config.getClass().getMethod("getBrokerIP1").invoke(config);
        brokerAddr = host + ":" + port;
        Class<?> clientConfig = Class.forName("org.apache.rocketmq.remoting.netty.NettyClientConfig");
        client = Class.forName("org.apache.rocketmq.remoting.netty.NettyRemotingClient")
            .getConstructor(clientConfig).newInstance(clientConfig.getConstructor().newInstance());
        call(client, "start");
        Queues.start(brokerAddr, (String) config.getClass().getMethod("getBrokerName").invoke(config));
    }

    static void hold(String name, ExecutorService executor) {
        Holder holder = new Holder(queues.get(name));
        executor.execute(holder);
        waitFor(() -> holder.running, ANSWER_TIMEOUT_MS, "the " + name + " thread to run the holder");
        holders.put(name, holder);
    }

    static void serve() throws Exception {
        ServerSocket server = new ServerSocket(0, 4, InetAddress.getLoopbackAddress());
        Path file = Paths.get(System.getProperty("mqc.control"));
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.write(tmp, String.valueOf(server.getLocalPort()).getBytes(StandardCharsets.UTF_8));
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
        while (true) {
            Socket socket = server.accept();
            Thread t = new Thread(() -> converse(socket), "mqconform-control");
            t.setDaemon(true);
            t.start();
        }
    }

    static void converse(Socket socket) {
        try (Socket s = socket;
             BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
             PrintWriter out = new PrintWriter(new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) continue;
                JSONObject answer = new JSONObject();
                try {
                    JSONObject req = JSON.parseObject(line);
                    synchronized (BrokerDriver.class) {
                        answer.put("result", handle(req.getString("op"), req));
                    }
                    answer.put("ok", true);
                } catch (Throwable e) {
                    Throwable t = e instanceof java.lang.reflect.InvocationTargetException ? e.getCause() : e;
                    answer.put("ok", false);
                    answer.put("error", t.getClass().getSimpleName() + ": " + t.getMessage());
                }
                out.println(JSON.toJSONString(answer, com.alibaba.fastjson.serializer.SerializerFeature.WriteMapNullValue));
                out.flush();
            }
        } catch (Exception e) {
            e.printStackTrace();
        }
    }

    // ------------------------------------------------------------------ operations
    static Object handle(String op, JSONObject req) throws Exception {
        switch (op) {
            case "reset": return reset(req);
            case "submit": return submit(req.getString("queue"), req.getString("id"));
            case "take": return take(req.getString("queue"));
            case "lock": return lock(req.getBooleanValue("held"));
            case "advance": return advance(req.getLongValue("ms"));
            case "request": {
                Req r = byId.get(req.getString("id"));
                if (r == null) throw new IllegalArgumentException("unknown request " + req.getString("id"));
                return r.answer();
            }
            case "state": return state();
            case "free": return free();
            default: return Queues.handle(op, req);
        }
    }

    /** The queues' mode (no admission): the send and pull threads run every request as it comes, on
     *  the wall clock, the queues at the broker's default capacities; an admission's reset holds them. */
    static Object free() throws Exception {
        Clock.set(-1);
        holdBegin = null;
        beginTimeInLock.setLong(commitLog, 0L);
        Field capacity = field(LinkedBlockingQueue.class, "capacity");
        capacity.setInt(queues.get("send"), defaultCapacity.get("send"));
        capacity.setInt(queues.get("pull"), defaultCapacity.get("pull"));
        for (Holder h : holders.values()) h.free = true;
        return null;
    }

    static Object reset(JSONObject req) throws Exception {
        for (Holder h : holders.values()) h.free = false;
        for (Holder h : holders.values()) waitFor(() -> !h.polling, ANSWER_TIMEOUT_MS, "the holder to leave its free poll");
        long period = req.getLongValue("scan_period_ms");
        if (period != 10) throw new IllegalArgumentException("the broker's scan period is 10 ms, not " + period);
        JSONObject given = req.getJSONObject("queues");
        for (String name : given.keySet()) {
            if (!queues.containsKey(name)) throw new IllegalArgumentException("queue " + name + " is not driven");
        }
        for (BlockingQueue<Runnable> q : queues.values()) {
            for (Runnable r; (r = q.poll()) != null; ) {
                Object rt = castRunnable.invoke(null, r);
                if (rt != null) rt.getClass().getMethod("setStopRun", boolean.class).invoke(rt, true);
            }
        }
        byId.clear();
        byOpaque.clear();
        base = (System.currentTimeMillis() / 1000 + 100000) * 1000;  // logical 0: an epoch-like instant
        now = 0;
        Clock.set(base);
        scanStart = req.getLongValue("scan_start_ms");
        scanPeriod = period;
        holdBegin = null;
        beginTimeInLock.setLong(commitLog, 0L);
        Object config = call(controller, "getBrokerConfig");
        config.getClass().getMethod("setBrokerFastFailureEnable", boolean.class).invoke(config, req.getBooleanValue("enabled"));
        Object storeConfig = call(controller, "getMessageStoreConfig");
        storeConfig.getClass().getMethod("setOsPageCacheBusyTimeOutMills", long.class)
            .invoke(storeConfig, req.getLongValue("busy_after_ms"));
        Field capacity = field(LinkedBlockingQueue.class, "capacity");
        for (String name : given.keySet()) {
            JSONObject limit = given.getJSONObject(name);
            String setter = name.equals("send") ? "setWaitTimeMillsInSendQueue" : "setWaitTimeMillsInPullQueue";
            config.getClass().getMethod(setter, long.class).invoke(config, limit.getLongValue("wait_ms"));
            capacity.setInt(queues.get(name), limit.getIntValue("capacity"));
        }
        return null;
    }

    static Object submit(String queue, String id) throws Exception {
        if (!queues.containsKey(queue)) throw new IllegalArgumentException("queue " + queue + " is not driven");
        if (byId.containsKey(id)) throw new IllegalArgumentException("request " + id + " was submitted already");
        Req r = new Req(id, queue);
        Object cmd = queue.equals("send") ? sendCommand(id) : pullCommand();
        r.opaque = (Integer) call(cmd, "getOpaque");
        byId.put(id, r);
        byOpaque.put(r.opaque, r);
        Class<?> callback = Class.forName("org.apache.rocketmq.remoting.InvokeCallback");
        Object cb = java.lang.reflect.Proxy.newProxyInstance(BrokerDriver.class.getClassLoader(), new Class<?>[] {callback},
            (proxy, method, args) -> {
                if (method.getName().equals("operationComplete") && args[0] != null) {
                    r.answered(args[0].getClass().getMethod("getResponseCommand").invoke(args[0]));
                } else if (method.getName().equals("operationSucceed")) {
                    r.answered(args[0]);
                } else if (method.isDefault()) {
                    return java.lang.reflect.InvocationHandler.invokeDefault(proxy, method, args);
                }
                return null;
            });
        client.getClass().getMethod("invokeAsync", String.class, cmd.getClass(), long.class, callback)
            .invoke(client, brokerAddr, cmd, RPC_TIMEOUT_MS, cb);
        BlockingQueue<Runnable> q = queues.get(queue);
        waitFor(() -> r.code != null || opaques(q).contains(r.opaque), ANSWER_TIMEOUT_MS, id + " to be queued or answered");
        if (r.code == null) return "queued";
        JSONObject a = r.answer();
        return a.getString("answer");
    }

    static Object take(String queue) throws Exception {
        Holder holder = holders.get(queue);
        if (holder == null) throw new IllegalArgumentException("queue " + queue + " is not driven");
        Runnable r = holder.take();
        if (r == null) return null;
        Object rt = castRunnable.invoke(null, r);
        Req req = rt == null ? null : byOpaque.get(opaqueOf(rt));
        if (req == null) throw new IllegalStateException("the " + queue + " thread took a request the driver did not send");
        req.taken = true;
        waitFor(() -> req.code != null, ANSWER_TIMEOUT_MS, req.id + "'s answer after its take");
        beginTimeInLock.setLong(commitLog, holdBegin == null ? 0L : base + holdBegin);
        return req.id;
    }

    static Object lock(boolean held) throws Exception {
        if (!held) {
            holdBegin = null;
        } else if (holdBegin == null) {
            holdBegin = now;
        }
        beginTimeInLock.setLong(commitLog, holdBegin == null ? 0L : base + holdBegin);
        return null;
    }

    static Object advance(long ms) throws Exception {
        if (ms < 0) throw new IllegalArgumentException("advance " + ms);
        long end = now + ms;
        long t = scanStart;
        if (now >= scanStart) t = scanStart + ((now - scanStart) / scanPeriod + 1) * scanPeriod;
        for (; t <= end; t += scanPeriod) {
            boolean work = false;
            for (BlockingQueue<Runnable> q : queues.values()) work |= !q.isEmpty();
            if (!work) continue;  // a tick with every queue empty answers nothing
            now = t;
            Clock.set(base + t);
            Set<Integer> before = new LinkedHashSet<>();
            for (BlockingQueue<Runnable> q : queues.values()) before.addAll(opaques(q));
            tick.run();
            for (BlockingQueue<Runnable> q : queues.values()) before.removeAll(opaques(q));
            for (Integer gone : before) {
                Req r = byOpaque.get(gone);
                if (r != null) waitFor(() -> r.code != null, ANSWER_TIMEOUT_MS, r.id + "'s answer after the tick at " + now);
            }
        }
        now = end;
        Clock.set(base + end);
        return null;
    }

    static Object state() throws Exception {
        JSONObject s = new JSONObject();
        s.put("now", now);
        s.put("hold", holdBegin);
        s.put("begin_time_in_lock", beginTimeInLock.getLong(commitLog) - base);
        for (Map.Entry<String, BlockingQueue<Runnable>> e : queues.entrySet()) {
            List<String> ids = new ArrayList<>();
            for (Integer o : opaques(e.getValue())) {
                Req r = byOpaque.get(o);
                ids.add(r == null ? "?" + o : r.id);
            }
            s.put(e.getKey(), ids);
        }
        return s;
    }

    // ------------------------------------------------------------------ requests
    static Object sendCommand(String id) throws Exception {
        Class<?> h = Class.forName("org.apache.rocketmq.remoting.protocol.header.SendMessageRequestHeader");
        Object header = h.getConstructor().newInstance();
        set(header, "setProducerGroup", String.class, GROUP);
        set(header, "setTopic", String.class, TOPIC);
        set(header, "setDefaultTopic", String.class, "TBW102");
        set(header, "setDefaultTopicQueueNums", Integer.class, 1);
        set(header, "setQueueId", Integer.class, 0);
        set(header, "setSysFlag", Integer.class, 0);
        set(header, "setBornTimestamp", Long.class, System.currentTimeMillis());
        set(header, "setFlag", Integer.class, 0);
        set(header, "setProperties", String.class, "KEYS\u0001" + id + "\u0002");
        set(header, "setReconsumeTimes", Integer.class, 0);
        set(header, "setBatch", Boolean.class, false);
        Object cmd = command(10, header);  // RequestCode.SEND_MESSAGE
        cmd.getClass().getMethod("setBody", byte[].class).invoke(cmd, (Object) id.getBytes(StandardCharsets.UTF_8));
        return cmd;
    }

    static Object pullCommand() throws Exception {
        Class<?> h = Class.forName("org.apache.rocketmq.remoting.protocol.header.PullMessageRequestHeader");
        Object header = h.getConstructor().newInstance();
        set(header, "setConsumerGroup", String.class, GROUP);
        set(header, "setTopic", String.class, TOPIC);
        set(header, "setQueueId", Integer.class, 0);
        set(header, "setQueueOffset", Long.class, 0L);
        set(header, "setMaxMsgNums", Integer.class, 1);
        // no commit offset, no suspend (long polling), the subscription in the request
        int flag = (Integer) Class.forName("org.apache.rocketmq.common.sysflag.PullSysFlag")
            .getMethod("buildSysFlag", boolean.class, boolean.class, boolean.class, boolean.class)
            .invoke(null, false, false, true, false);
        set(header, "setSysFlag", Integer.class, flag);
        set(header, "setCommitOffset", Long.class, 0L);
        set(header, "setSuspendTimeoutMillis", Long.class, 0L);
        set(header, "setSubscription", String.class, "*");
        set(header, "setSubVersion", Long.class, 0L);
        set(header, "setExpressionType", String.class, "TAG");
        return command(11, header);  // RequestCode.PULL_MESSAGE
    }

    static Object command(int code, Object header) throws Exception {
        Class<?> cmd = Class.forName("org.apache.rocketmq.remoting.protocol.RemotingCommand");
        Class<?> custom = Class.forName("org.apache.rocketmq.remoting.CommandCustomHeader");
        return cmd.getMethod("createRequestCommand", int.class, custom).invoke(null, code, header);
    }

    static Set<Integer> opaques(BlockingQueue<Runnable> q) {
        Set<Integer> found = new LinkedHashSet<>();
        for (Runnable r : q) {
            try {
                Object rt = castRunnable.invoke(null, r);
                if (rt != null) found.add(opaqueOf(rt));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        return found;
    }

    static int opaqueOf(Object requestTask) throws Exception {
        Object cmd = requestOfTask.get(requestTask);
        return (Integer) call(cmd, "getOpaque");
    }

    // ------------------------------------------------------------------ helpers
    static void waitFor(BooleanSupplier done, long timeoutMs, String what) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("timed out waiting for " + what);
            LockSupport.parkNanos(100_000);
        }
    }

    static Object call(Object target, String method) throws Exception {
        Method m = target.getClass().getMethod(method);
        m.setAccessible(true);
        return m.invoke(target);
    }

    static void set(Object target, String method, Class<?> type, Object value) throws Exception {
        target.getClass().getMethod(method, type).invoke(target, value);
    }

    static Field field(Class<?> owner, String name) throws NoSuchFieldException {
        for (Class<?> c = owner; c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException e) {
                // look further up
            }
        }
        throw new NoSuchFieldException(owner.getName() + "." + name);
    }
}
