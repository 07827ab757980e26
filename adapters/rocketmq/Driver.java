// The rocketmq adapter's client: the Apache RocketMQ Java client (remoting protocol, the broker's own
// send queue), run in source-file mode (java -cp <client jars> Driver.java). One JSON object a line
// on stdin, one answer a line on stdout: {"ok":true,...} or {"ok":false,"error":"..."}.
//
//   {"op":"start","namesrv":"127.0.0.1:9876"}                   producer and pull consumer started
//   {"op":"create_topic","topic":"t"}                           one read/write queue, route visible
//   {"op":"load","topic":"t","prefix":"p","count":N,"size":B}   N concurrent async sends, no retries:
//        answers [{"id":..,"status":"ok"|"busy"|"error","code":C,"remark":R}] in id order
//   {"op":"read","topic":"t"}                                    every stored message's id, in order
//   {"op":"config","broker":"127.0.0.1:10911","props":{"k":"v"}}  broker config changed at run time
//   {"op":"quit"}
import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class Driver {
    static final int SEND_TIMEOUT_MS = 20000;
    static DefaultMQProducer producer;
    static DefaultMQPullConsumer consumer;
    static DefaultMQAdminExt admin;
    static PrintStream out;

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);  // whatever the client prints stays off the protocol
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JSONObject answer;
            String op = "";
            try {
                JSONObject req = JSON.parseObject(line);
                op = req.getString("op");
                answer = handle(op, req);
            } catch (Throwable e) {
                answer = new JSONObject();
                answer.put("ok", false);
                answer.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            out.println(answer.toJSONString());
            if ("quit".equals(op)) break;
        }
        if (producer != null) producer.shutdown();
        if (consumer != null) consumer.shutdown();
        if (admin != null) admin.shutdown();
        System.exit(0);
    }

    static JSONObject handle(String op, JSONObject req) throws Exception {
        JSONObject answer = new JSONObject();
        answer.put("ok", true);
        switch (op) {
            case "start": {
                String namesrv = req.getString("namesrv");
                producer = new DefaultMQProducer("mqconform-producer");
                producer.setNamesrvAddr(namesrv);
                producer.setInstanceName("mqconform-" + ProcessHandle.current().pid());
                producer.setRetryTimesWhenSendAsyncFailed(0);
                producer.setRetryTimesWhenSendFailed(0);
                producer.setSendMsgTimeout(SEND_TIMEOUT_MS);
                producer.setSendLatencyFaultEnable(false);
                producer.start();
                consumer = new DefaultMQPullConsumer("mqconform-reader");
                consumer.setNamesrvAddr(namesrv);
                consumer.setInstanceName("mqconform-" + ProcessHandle.current().pid());
                consumer.start();
                admin = new DefaultMQAdminExt();
                admin.setNamesrvAddr(namesrv);
                admin.setInstanceName("mqconform-admin-" + ProcessHandle.current().pid());
                admin.start();
                return answer;
            }
            case "create_topic": {
                String topic = req.getString("topic");
                long deadline = System.currentTimeMillis() + 30000;
                Throwable last = null;
                while (System.currentTimeMillis() < deadline) {
                    try {
                        producer.createTopic("TBW102", topic, 1, null);
                        if (!producer.fetchPublishMessageQueues(topic).isEmpty()) return answer;
                    } catch (Throwable e) {
                        last = e;
                    }
                    Thread.sleep(200);
                }
                throw new IllegalStateException("topic " + topic + " not routable: " + last);
            }
            case "load": return load(req, answer);
            case "read": {
                String topic = req.getString("topic");
                List<String> ids = new ArrayList<>();
                for (MessageQueue mq : consumer.fetchSubscribeMessageQueues(topic)) {
                    long offset = 0;
                    while (true) {
                        PullResult r = consumer.pull(mq, "*", offset, 32, 10000);
                        if (r.getPullStatus() != PullStatus.FOUND) break;
                        for (MessageExt m : r.getMsgFoundList()) ids.add(m.getKeys());
                        offset = r.getNextBeginOffset();
                    }
                }
                answer.put("ids", ids);
                return answer;
            }
            case "config": {
                java.util.Properties props = new java.util.Properties();
                JSONObject given = req.getJSONObject("props");
                for (String k : given.keySet()) props.setProperty(k, given.getString(k));
                admin.updateBrokerConfig(req.getString("broker"), props);
                java.util.Properties now = admin.getBrokerConfig(req.getString("broker"));
                JSONObject seen = new JSONObject();
                for (String k : given.keySet()) seen.put(k, now.getProperty(k));
                answer.put("config", seen);
                return answer;
            }
            case "quit": return answer;
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    static JSONObject load(JSONObject req, JSONObject answer) throws Exception {
        String topic = req.getString("topic");
        String prefix = req.getString("prefix");
        int count = req.getIntValue("count");
        int size = req.getIntValue("size");
        byte[] body = new byte[Math.max(size, 1)];
        Arrays.fill(body, (byte) 'x');
        Map<String, JSONObject> answers = new LinkedHashMap<>();
        List<Message> messages = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String id = prefix + "-" + i;
            Message m = new Message(topic, null, id, body);
            messages.add(m);
            JSONObject a = new JSONObject();
            a.put("id", id);
            answers.put(id, a);
        }
        CountDownLatch done = new CountDownLatch(count);
        for (Message m : messages) {
            final JSONObject a = answers.get(m.getKeys());
            try {
                producer.send(m, new SendCallback() {
                    public void onSuccess(SendResult r) {
                        synchronized (a) {
                            a.put("status", r.getSendStatus() == SendStatus.SEND_OK ? "ok" : "stored_" + r.getSendStatus());
                        }
                        done.countDown();
                    }
                    public void onException(Throwable e) {
                        synchronized (a) { describe(a, e); }
                        done.countDown();
                    }
                }, SEND_TIMEOUT_MS);
            } catch (Throwable e) {
                synchronized (a) { describe(a, e); }
                done.countDown();
            }
        }
        if (!done.await(SEND_TIMEOUT_MS + 10000, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("sends still unanswered after " + (SEND_TIMEOUT_MS + 10000) + " ms");
        }
        List<JSONObject> list = new ArrayList<>();
        for (JSONObject a : answers.values()) synchronized (a) { list.add(a); }
        answer.put("answers", list);
        return answer;
    }

    static void describe(JSONObject a, Throwable e) {
        Throwable t = e;
        while (t != null && !(t instanceof MQBrokerException) && t.getCause() != null && t.getCause() != t) t = t.getCause();
        if (t instanceof MQBrokerException) {
            MQBrokerException b = (MQBrokerException) t;
            a.put("status", b.getResponseCode() == 2 ? "busy" : "refused");
            a.put("code", b.getResponseCode());
            a.put("remark", b.getErrorMessage());
        } else {
            a.put("status", "error");
            a.put("remark", e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }
}
