// The rocketmq adapter's queues (see docs/adapters/rocketmq.md): an address is a topic of ONE read/write
// queue, a queue is a consumer group of that topic, consumed by POP (RocketMQ 5's per-message
// acknowledgement): each receive is one POP_MESSAGE of at most one message, an ack is its ACK_MESSAGE,
// and a consumer's close changes the invisible time of what it holds to 0 (CHANGE_MESSAGE_INVISIBLETIME)
// and waits until the broker's revive service has put each of them into the group's retry topic,
// which a receive reads first: while that topic holds messages the group has not popped, the driver
// pops it directly (the broker's own pop of a topic reads its retry topic first too, with
// popFromRetryProbability=100, but skips it when that queue's lock is taken and then serves the topic
// itself). Every request goes through MQClientAPIImpl, the broker's own client classes, over the
// remoting protocol to the broker's listen port.
//
//   {"op":"topic","topic":T}                      a topic of one queue (no-op when it exists)
//   {"op":"group","group":G,"topic":T}            the group's offset: the topic's max offset now
//   {"op":"send","topic":T,"id":"m1"}            -> "accepted" (SEND_OK) or the broker's code and remark
//   {"op":"pop","group":G,"topic":T}             -> null or {"id","handle","topic","offset"}
//   {"op":"ack","group":G,"topic":T,"handle":H}  -> "ok" or the broker's status (T: the popped topic)
//   {"op":"return","group":G,"topic":T,"held":[{handle,topic,offset},...]}   -> null, once revived
//   {"op":"drop","topics":[T,...],"groups":[{group,topic},...]}                an example's clean-up
package mqconform.rocketmq;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.AckCallback;
import org.apache.rocketmq.client.consumer.AckResult;
import org.apache.rocketmq.client.consumer.PopCallback;
import org.apache.rocketmq.client.consumer.PopResult;
import org.apache.rocketmq.client.consumer.PopStatus;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.common.KeyBuilder;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.ConsumeInitMode;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.header.AckMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ChangeInvisibleTimeRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.SendMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.SendMessageResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.UpdateConsumerOffsetRequestHeader;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;

final class Queues {
    static final long TIMEOUT_MS = 10000;
    /** a held message's invisible time: longer than any example (the timer wheel takes up to 3 days) */
    static final long HELD_MS = 3600000;
    /** how long a close waits for the revive service to return what the consumer held */
    static final long RETURN_TIMEOUT_MS = 30000;
    /** how often a pop answered empty with messages left is asked again (2 ms apart) */
    static final int REPOP_TRIES = 500;

    /** retry topic -> how many of its messages a receive has popped (its backlog: max offset - this) */
    static final java.util.Map<String, Long> retryPopped = new java.util.HashMap<>();

    static MQClientAPIImpl api;
    static String addr;
    static String brokerName;

    private Queues() {
    }

    static void start(String brokerAddr, String name) {
        addr = brokerAddr;
        brokerName = name;
        ClientConfig config = new ClientConfig();
        config.setInstanceName("mqconform-queues");
        api = new MQClientAPIImpl(new NettyClientConfig(), null, null, config);
        api.start();
    }

    static Object handle(String op, JSONObject req) throws Exception {
        switch (op) {
            case "topic": return topic(req.getString("topic"));
            case "group": return group(req.getString("group"), req.getString("topic"));
            case "send": return send(req.getString("topic"), req.getString("id"));
            case "pop": return pop(req.getString("group"), req.getString("topic"));
            case "ack": return ack(req.getString("group"), req.getString("topic"), req.getString("handle"));
            case "return": return giveBack(req.getString("group"), req.getString("topic"), req.getJSONArray("held"));
            case "drop": return drop(req.getJSONArray("topics"), req.getJSONArray("groups"));
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    static Object topic(String topic) throws Exception {
        Object topics = BrokerDriver.call(BrokerDriver.controller, "getTopicConfigManager");
        TopicConfig config = new TopicConfig(topic, 1, 1, 6);
        topics.getClass().getMethod("updateTopicConfig", TopicConfig.class).invoke(topics, config);
        return null;
    }

    /** An example's clean-up: its groups (with their offsets and retry topics) and its topics. */
    static Object drop(JSONArray topics, JSONArray groups) throws Exception {
        for (int i = 0; i < groups.size(); i++) {
            JSONObject g = groups.getJSONObject(i);
            api.deleteSubscriptionGroup(addr, g.getString("group"), true, TIMEOUT_MS);
            String retry = KeyBuilder.buildPopRetryTopic(g.getString("topic"), g.getString("group"), false);
            if (queueMax(retry) > 0) api.deleteTopicInBroker(addr, retry, TIMEOUT_MS);
            retryPopped.remove(retry);
        }
        for (int i = 0; i < topics.size(); i++) api.deleteTopicInBroker(addr, topics.getString(i), TIMEOUT_MS);
        return null;
    }

    static Object group(String group, String topic) throws Exception {
        SubscriptionGroupConfig config = new SubscriptionGroupConfig();
        config.setGroupName(group);
        api.createSubscriptionGroup(addr, config, TIMEOUT_MS);
        long max = api.getMaxOffset(addr, new MessageQueue(topic, brokerName, 0), TIMEOUT_MS);
        UpdateConsumerOffsetRequestHeader header = new UpdateConsumerOffsetRequestHeader();
        header.setConsumerGroup(group);
        header.setTopic(topic);
        header.setQueueId(0);
        header.setCommitOffset(max);
        api.updateConsumerOffset(addr, header, TIMEOUT_MS);
        return max;
    }

    static Object send(String topic, String id) throws Exception {
        SendMessageRequestHeader header = new SendMessageRequestHeader();
        header.setProducerGroup("mqconform-producer");
        header.setTopic(topic);
        header.setDefaultTopic("TBW102");
        header.setDefaultTopicQueueNums(1);
        header.setQueueId(0);
        header.setSysFlag(0);
        header.setBornTimestamp(System.currentTimeMillis());
        header.setFlag(0);
        header.setProperties(MessageConst.PROPERTY_KEYS + "\u0001" + id + "\u0002");  // MessageDecoder's separators
        header.setReconsumeTimes(0);
        header.setBatch(false);
        RemotingCommand cmd = RemotingCommand.createRequestCommand(RequestCode.SEND_MESSAGE, header);
        cmd.setBody(id.getBytes(StandardCharsets.UTF_8));
        RemotingCommand response = api.getRemotingClient().invokeSync(addr, cmd, TIMEOUT_MS);
        if (response.getCode() != ResponseCode.SUCCESS) return "code " + response.getCode() + ": " + response.getRemark();
        // the store dispatches a stored message to its consume queue a moment later (ReputMessageService):
        // the send is done once a pop can find it
        SendMessageResponseHeader sent = (SendMessageResponseHeader) response.decodeCommandCustomHeader(
            SendMessageResponseHeader.class);
        waitForQueue(topic, sent.getQueueOffset() + 1, "the dispatch of " + id);
        return "accepted";
    }

    /** A receive: the group's retry topic while it holds messages not yet popped, else the topic. */
    static Object pop(String group, String topic) throws Exception {
        String retry = KeyBuilder.buildPopRetryTopic(topic, group, false);
        long popped = retryPopped.getOrDefault(retry, 0L);
        PopResult result = null;
        if (queueMax(retry) > popped) {
            // popped directly, not as the topic's retry: PopMessageProcessor#processRequest skips a retry
            // queue whose lock is taken and serves the topic instead (a later return ahead of it)
            result = popPatiently(group, retry);
            if (!found(result)) {
                throw new IllegalStateException("the retry topic " + retry + " holds " + (queueMax(retry) - popped)
                    + " message(s) not popped, and a pop of it found none");
            }
            retryPopped.put(retry, popped + 1);
        } else {
            result = popPatiently(group, topic);
        }
        if (!found(result)) return null;
        if (result.getMsgFoundList().size() != 1) {
            throw new IllegalStateException("a pop of at most one message gave " + result.getMsgFoundList().size());
        }
        MessageExt msg = result.getMsgFoundList().get(0);
        JSONObject got = new JSONObject();
        got.put("id", msg.getKeys());
        got.put("handle", msg.getProperty(MessageConst.PROPERTY_POP_CK));
        got.put("topic", msg.getTopic());
        got.put("offset", msg.getQueueOffset());
        got.put("reconsume_times", msg.getReconsumeTimes());
        return got;
    }

    /** One pop of `topic`, asked again while the broker answers empty but counts messages left. */
    static PopResult popPatiently(String group, String topic) throws Exception {
        PopResult result = popOnce(group, topic);
        // a pop the broker answers empty while it counts messages left (restNum > 0) skipped the queue
        // because its lock was held (PopMessageProcessor#popMsgFromQueue: PopBufferMergeService commits
        // offsets under the same lock): asked again, since the broker itself reports messages left
        for (int tries = 0; !found(result) && result.getRestNum() > 0 && tries < REPOP_TRIES; tries++) {
            Thread.sleep(2);
            result = popOnce(group, topic);
        }
        return result;
    }

    static boolean found(PopResult result) {
        return result.getPopStatus() == PopStatus.FOUND && result.getMsgFoundList() != null
            && !result.getMsgFoundList().isEmpty();
    }

    static PopResult popOnce(String group, String topic) throws Exception {
        PopMessageRequestHeader header = new PopMessageRequestHeader();
        header.setConsumerGroup(group);
        header.setTopic(topic);
        header.setQueueId(-1);
        header.setMaxMsgNums(1);
        header.setInvisibleTime(HELD_MS);
        header.setPollTime(0);
        header.setBornTime(System.currentTimeMillis());
        header.setInitMode(ConsumeInitMode.MIN);
        header.setExpType("TAG");
        header.setExp("*");
        CompletableFuture<PopResult> done = new CompletableFuture<>();
        api.popMessageAsync(brokerName, addr, header, TIMEOUT_MS, new PopCallback() {
            public void onSuccess(PopResult result) {
                done.complete(result);
            }

            public void onException(Throwable e) {
                done.completeExceptionally(e);
            }
        });
        return done.get(TIMEOUT_MS * 2, TimeUnit.MILLISECONDS);
    }

    /** The header fields of an ack or a change of invisible time, as the push consumer fills them. */
    static String[] parts(String handle) {
        return ExtraInfoUtil.split(handle);
    }

    /** The topic a message was popped from, given the topic it came with: a retry topic popped
     *  directly is itself (its receipt marks it retry, which ExtraInfoUtil#getRealTopic would nest). */
    static String realTopic(String[] info, String popped, String group) {
        return popped.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX) ? popped : ExtraInfoUtil.getRealTopic(info, popped, group);
    }

    static Object ack(String group, String topic, String handle) throws Exception {
        String[] info = parts(handle);
        AckMessageRequestHeader header = new AckMessageRequestHeader();
        header.setConsumerGroup(group);
        header.setTopic(realTopic(info, topic, group));
        header.setQueueId(ExtraInfoUtil.getQueueId(info));
        header.setExtraInfo(handle);
        header.setOffset(ExtraInfoUtil.getQueueOffset(info));
        AckResult result = answered(callback -> api.ackMessageAsync(addr, TIMEOUT_MS, callback, header));
        return result.getStatus() == org.apache.rocketmq.client.consumer.AckStatus.OK ? "ok" : String.valueOf(result.getStatus());
    }

    /** A request whose answer comes to an AckCallback (an ack, a change of invisible time), awaited. */
    interface AckRequest {
        void send(AckCallback callback) throws Exception;
    }

    static AckResult answered(AckRequest request) throws Exception {
        CompletableFuture<AckResult> done = new CompletableFuture<>();
        request.send(callback(done));
        return done.get(TIMEOUT_MS * 2, TimeUnit.MILLISECONDS);
    }

    static AckCallback callback(CompletableFuture<AckResult> done) {
        return new AckCallback() {
            public void onSuccess(AckResult result) {
                done.complete(result);
            }

            public void onException(Throwable e) {
                done.completeExceptionally(e);
            }
        };
    }

    /** A consumer's close: what it holds becomes visible at once, in the order given (`topic` the
     *  address's topic, each held message's own "topic" the one it was popped from); waits until the
     *  revive service has put each into the group's retry topic (counted by that topic's max offset). */
    static Object giveBack(String group, String topic, JSONArray held) throws Exception {
        if (held.isEmpty()) return null;
        String retry = KeyBuilder.buildPopRetryTopic(topic, group, false);
        long before = queueMax(retry);
        for (int i = 0; i < held.size(); i++) {
            String handle = held.getJSONObject(i).getString("handle");
            String[] info = parts(handle);
            ChangeInvisibleTimeRequestHeader header = new ChangeInvisibleTimeRequestHeader();
            header.setConsumerGroup(group);
            // the topic it was popped from: the topic, or the retry topic (revived into that one again)
            header.setTopic(realTopic(info, held.getJSONObject(i).getString("topic"), group));
            header.setQueueId(ExtraInfoUtil.getQueueId(info));
            header.setExtraInfo(handle);
            header.setOffset(ExtraInfoUtil.getQueueOffset(info));
            header.setInvisibleTime(0L);
            AckResult result = answered(
                callback -> api.changeInvisibleTimeAsync(brokerName, addr, header, TIMEOUT_MS, callback));
            if (result.getStatus() != org.apache.rocketmq.client.consumer.AckStatus.OK) {
                throw new IllegalStateException("change of invisible time answered " + result.getStatus());
            }
        }
        waitForQueue(retry, before + held.size(), "the revive of " + held.size() + " message(s)");
        return null;
    }

    /** Waits until the consume queue 0 of `topic` holds `count` entries (RETURN_TIMEOUT_MS at most). */
    static void waitForQueue(String topic, long count, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RETURN_TIMEOUT_MS);
        while (queueMax(topic) < count) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out (" + RETURN_TIMEOUT_MS + " ms) waiting for " + what);
            }
            Thread.sleep(2);
        }
    }

    static long queueMax(String retry) throws Exception {
        Object store = BrokerDriver.call(BrokerDriver.controller, "getMessageStore");
        return (Long) store.getClass().getMethod("getMaxOffsetInQueue", String.class, int.class).invoke(store, retry, 0);
    }
}
