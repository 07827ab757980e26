// An embedded HornetQ 2.4 server for the mqconform `hornetq` adapter, run in source-file mode:
//   java -cp '<cache>/lib/*' Launcher.java <data-dir> <stomp-port> <control-port>
// One Netty acceptor on 127.0.0.1:<stomp-port> speaks STOMP only (stomp-consumer-credits=1: a STOMP
// subscription holds at most one unacknowledged message). Management is a control socket on
// 127.0.0.1:<control-port> (one client at a time), one command a line, one answer a line
// ("ok ..." or "err <text>"):
//   settings <address> <max-size-bytes> <page-size-bytes> <PAGE|BLOCK|FAIL|DROP> [<max-delivery-attempts>]
//   queue <address> <queue>             destroy <queue>             unsettings <address>
//   counters <queue>    -> ok <messageCount> <delivering> <scheduled> <added> <paged> <inMemory>
//   store <address>     -> ok <addressSize> <isPaging 0|1> <numberOfPages> <maxSize> (with the address
//                          empty, after the page cleanup in flight, at most 2 s)
//   list <queue> <prop> -> ok <value of property <prop> of each in-memory reference, in queue order>
//   estimates <queue> -> ok <memoryEstimate:encodeSize:capacity of each in-memory message>
//   refsize             -> ok <MessageReferenceImpl#getMemoryEstimate()>
// Core sessions (an in-VM core client; each session's acks are transacted: autoCommitAcks false):
//   session <s> <queue-address> <max-delivery-attempts> (opens session s; settings take the attempts)
//   take <s> <c> <queue> <prop> <value> <wait-ms> -> ok <value>|none (consumer c, window 0, filter
//                          prop = 'value', receive(wait)); the consumer holds what it received
//   ack <c> <tx 0|1>    -> ok (tx 1: ClientMessage#individualAcknowledge into the session's
//                          transaction; tx 0: ServerConsumerImpl#individualAcknowledge with
//                          autoCommitAcks, the path of a session whose acks are not transacted)
//   release <c>         (ClientConsumer#close)
//   consume <s> <c> <queue> <window> (a consumer c that stays: windowSize <window>, no filter)
//   next <c> <prop> <wait-ms> -> ok <value> <flow-control size>|none (ClientConsumer#receive(wait),
//                          then waits for the credits it returned to reach the server)
//   ackupto <c> <value> <tx 0|1> (ClientMessage#acknowledge: every message the consumer delivered up
//                          to that one, ServerConsumerImpl#acknowledge; tx 0 with autoCommitAcks)
//   ackone <c> <value> <tx 0|1>  (the same, one message: #individualAcknowledge)
// Core producers (the BLOCK policy: a STOMP producer takes no credits in 2.4):
//   producer <address> [<key>] (a session and producer of producer window 2, named <key> (default:
//                        the address) in the commands below: every send requests its own credits,
//                        PagingStoreImpl#checkMemory grants them only under max-size-bytes)
//   bsend <key> <id> <pad> <body> -> ok accepted|blocked (a durable message, properties mqcid=id
//                        and p=<pad x>, <body> body bytes; sent on the producer's own thread: blocked
//                        when it waits for credits the store holds back while the address is full;
//                        the thread first waits for the store's executor to run what it holds, so
//                        the send asks for its credits only after a MemoryFreedRunnablesExecutor
//                        loop in progress ended)
//   bsettle <key>       -> ok <sends still blocked> (waits until each send went or is held back)
//   unproducer <key>    (closes the producer's session)
//   commit <s>  rollback <s>  endsession <s> (ClientSession#commit, #rollback, #close)
//   debug <queue>       -> ok <owes-depage|settled> <queueMemorySize> <depagePending> <QueueImpl#debug()>
//   pagecounter <queue> -> ok <PageSubscriptionCounter#getValue> <empty 0|1> (the page counter that
//                        MessagesAdded adds; PageSubscriptionImpl's `empty`: 1 until the queue's first
//                        paged message, and again once #onPageModeCleared reset the counter)
//   quit (ends this client's session)
// Address settings are written before an address's paging store exists (the adapter's addresses are
// new per example), so the store reads them at creation (PagingManagerImpl#getPageStore).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.hornetq.api.core.SimpleString;
import org.hornetq.api.core.TransportConfiguration;
import org.hornetq.api.core.client.ClientConsumer;
import org.hornetq.api.core.client.ClientMessage;
import org.hornetq.api.core.client.ClientSession;
import org.hornetq.api.core.client.ClientSessionFactory;
import org.hornetq.api.core.client.HornetQClient;
import org.hornetq.api.core.client.ServerLocator;
import org.hornetq.core.client.impl.ClientConsumerInternal;
import org.hornetq.core.client.impl.ClientSessionInternal;
import org.hornetq.core.remoting.impl.invm.InVMAcceptorFactory;
import org.hornetq.core.remoting.impl.invm.InVMConnectorFactory;
import org.hornetq.core.server.ServerConsumer;
import org.hornetq.core.server.ServerSession;
import org.hornetq.core.transaction.Transaction;
import org.hornetq.core.transaction.TransactionPropertyIndexes;
import org.hornetq.core.config.impl.ConfigurationImpl;
import org.hornetq.core.paging.PagingStore;
import org.hornetq.core.remoting.impl.netty.NettyAcceptorFactory;
import org.hornetq.core.server.HornetQServer;
import org.hornetq.core.server.HornetQServers;
import org.hornetq.core.server.MessageReference;
import org.hornetq.core.server.Queue;
import org.hornetq.core.server.impl.MessageReferenceImpl;
import org.hornetq.core.settings.impl.AddressFullMessagePolicy;
import org.hornetq.core.settings.impl.AddressSettings;
import org.hornetq.utils.LinkedListIterator;

public class Launcher {
    static ClientSessionFactory factory;
    static ClientSessionFactory producerFactory;
    /** address -> its producer's session, producer, one-thread executor and unfinished sends */
    static final Map<String, Object[]> producers = new HashMap<>();
    static final Map<String, ClientSession> sessions = new HashMap<>();
    /** consumer name -> its session's name, the consumer, the message it received */
    static final Map<String, Object[]> consumers = new HashMap<>();
    /** consumer name -> its session's name, the consumer, the messages it received and holds */
    static final Map<String, Object[]> kept = new HashMap<>();

    public static void main(String[] args) throws Exception {
        String data = args[0];
        int port = Integer.parseInt(args[1]);
        ConfigurationImpl config = new ConfigurationImpl();
        config.setPersistenceEnabled(true);
        config.setSecurityEnabled(false);
        config.setJMXManagementEnabled(false);
        config.setJournalDirectory(data + "/journal");
        config.setBindingsDirectory(data + "/bindings");
        config.setPagingDirectory(data + "/paging");
        config.setLargeMessagesDirectory(data + "/large");
        config.setJournalSyncTransactional(false);
        config.setJournalSyncNonTransactional(false);
        config.setJournalFileSize(1024 * 1024);
        config.setJournalMinFiles(2);
        Map<String, Object> params = new HashMap<>();
        params.put("host", "127.0.0.1");
        params.put("port", port);
        params.put("protocols", "STOMP");
        params.put("stomp-consumer-credits", 1);
        Set<TransportConfiguration> acceptors = new HashSet<>();
        acceptors.add(new TransportConfiguration(NettyAcceptorFactory.class.getName(), params));
        acceptors.add(new TransportConfiguration(InVMAcceptorFactory.class.getName()));
        config.setAcceptorConfigurations(acceptors);
        HornetQServer server = HornetQServers.newHornetQServer(config, true);
        server.start();
        ServerLocator locator = HornetQClient.createServerLocatorWithoutHA(
            new TransportConfiguration(InVMConnectorFactory.class.getName()));
        locator.setConsumerWindowSize(0);
        locator.setAckBatchSize(0);
        locator.setBlockOnAcknowledge(true);
        factory = locator.createSessionFactory();
        ServerLocator producing = HornetQClient.createServerLocatorWithoutHA(
            new TransportConfiguration(InVMConnectorFactory.class.getName()));
        producing.setProducerWindowSize(2);
        producing.setBlockOnDurableSend(true);
        producerFactory = producing.createSessionFactory();
        System.out.println("HQMQC ready " + server.getVersion().getFullVersion());
        System.out.flush();
        ServerSocket control = new ServerSocket(Integer.parseInt(args[2]), 1, InetAddress.getByName("127.0.0.1"));
        while (true) {
            try (Socket client = control.accept()) {
                client.setTcpNoDelay(true);
                serve(server, client);
            } catch (java.io.IOException e) {
                // the client went away: wait for the next one
            }
        }
    }

    static void serve(HornetQServer server, Socket client) throws java.io.IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(client.getOutputStream(), false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            String answer;
            if (w[0].equals("quit")) {
                return;
            }
            try {
                answer = "ok " + run(server, w);
            } catch (Exception e) {
                answer = "err " + String.valueOf(e).replace('\n', ' ');
            }
            out.print(answer + "\n");
            out.flush();
        }
    }

    static String run(HornetQServer server, String[] w) throws Exception {
        switch (w[0]) {
            case "settings": {
                AddressSettings s = new AddressSettings();
                s.setMaxSizeBytes(Long.parseLong(w[2]));
                s.setPageSizeBytes(Long.parseLong(w[3]));
                s.setAddressFullMessagePolicy(AddressFullMessagePolicy.valueOf(w[4]));
                if (w.length > 5) {
                    s.setMaxDeliveryAttempts(Integer.parseInt(w[5]));
                }
                server.getAddressSettingsRepository().addMatch(w[1], s);
                return "";
            }
            case "unsettings":
                server.getAddressSettingsRepository().removeMatch(w[1]);
                return "";
            case "queue":
                server.createQueue(new SimpleString(w[1]), new SimpleString(w[2]), null, true, false);
                return "";
            case "destroy":
                server.destroyQueue(new SimpleString(w[1]), null, false, true);
                return "";
            case "counters": {
                // the page subscription counter is updated once the page write completes (an I/O
                // callback): read until two reads 5 ms apart agree
                Queue q = queue(server, w[1]);
                String last = null;
                for (int round = 0; round < 200; round++) {
                    flush(q);
                    String now = counters(q);
                    // a queue that owes a depage (checkDepage runs after a delivery loop, on the page
                    // executor) is not settled yet: wait for it too, up to 100 rounds (40 were once
                    // too few on 2 cores under the whole test suite: the slow queue of seed 003)
                    if (now.equals(last) && (round >= 100 || !owesDepage(q))) {
                        break;
                    }
                    last = now;
                    Thread.sleep(5);
                }
                return last;
            }
            case "debug": {
                Queue q = queue(server, w[1]);
                return (owesDepage(q) ? "owes-depage " : "settled ") + field(q, "queueMemorySize") + " "
                    + field(q, "depagePending") + " " + ((org.hornetq.core.server.impl.QueueImpl) q).debug().replace('\n', '|');
            }
            case "store": {
                SimpleString address = new SimpleString(w[1]);
                PagingStore store = server.getPagingManager().getPageStore(address);
                store.getCursorProvider().flushExecutors();
                // page mode ends in the cursor provider's cleanup, which the last page ack schedules once
                // the ack is stored (PageSubscriptionImpl#processACK, PageCursorProviderImpl#cleanup): with
                // every queue of the address empty, wait (at most 2 s) for that cleanup instead of reading
                // a flag the broker is about to clear; a store that stays in page mode still answers 1
                long deadline = System.nanoTime() + 2_000_000_000L;
                while (store.isPaging() && addressEmpty(server, address) && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                    store.getCursorProvider().flushExecutors();
                }
                return store.getAddressSize() + " " + (store.isPaging() ? 1 : 0) + " "
                    + store.getNumberOfPages() + " " + store.getMaxSize();
            }
            case "list":
                flush(queue(server, w[1]));
                return String.join(" ", inMemory(queue(server, w[1]), w[2]));
            case "estimates": {
                flush(queue(server, w[1]));
                java.util.List<String> out = new java.util.ArrayList<>();
                synchronized (queue(server, w[1])) {
                    LinkedListIterator<MessageReference> it = queue(server, w[1]).iterator();
                    while (it.hasNext()) {
                        org.hornetq.core.server.ServerMessage m = it.next().getMessage();
                        out.add(m.getMemoryEstimate() + ":" + m.getEncodeSize() + ":" + m.getBodyBuffer().capacity());
                    }
                    it.close();
                }
                return String.join(" ", out);
            }
            case "dcount": {
                // the delivery count of the message whose property w[2] is w[3]: pending in memory,
                // scheduled or delivering (MessageReference#getDeliveryCount); "paged" when it is in
                // none of them while the queue has paged messages, "none" when the queue holds no such
                Queue q = queue(server, w[1]);
                flush(q);
                SimpleString prop = new SimpleString(w[2]);
                java.util.List<MessageReference> refs = new java.util.ArrayList<>();
                synchronized (q) {
                    LinkedListIterator<MessageReference> it = q.iterator();
                    try {
                        while (it.hasNext()) {
                            refs.add(it.next());
                        }
                    } finally {
                        it.close();
                    }
                }
                refs.addAll(q.getScheduledMessages());
                for (java.util.List<MessageReference> held : q.getDeliveringMessages().values()) {
                    refs.addAll(held);
                }
                refs.addAll(inTransactions(server, q));
                for (MessageReference ref : refs) {
                    if (w[3].equals(String.valueOf(ref.getMessage().getObjectProperty(prop)))) {
                        return Integer.toString(ref.getDeliveryCount());
                    }
                }
                boolean paged = q.getPageSubscription() != null && q.getPageSubscription().getMessageCount() > 0;
                return paged ? "paged" : "none";
            }
            case "session": {
                ClientSession session = factory.createSession(false, true, false);
                session.start();
                sessions.put(w[1], session);
                return "";
            }
            case "take": {
                ClientSession session = sessions.get(w[1]);
                ClientConsumer consumer = session.createConsumer(new SimpleString(w[3]),
                    new SimpleString(w[4] + " = '" + w[5] + "'"), 0, -1, false);
                ClientMessage m = consumer.receive(Long.parseLong(w[6]));
                if (m == null) {
                    consumer.close();
                    return "none";
                }
                consumers.put(w[2], new Object[] {w[1], consumer, m});
                return String.valueOf(m.getObjectProperty(new SimpleString(w[4])));
            }
            case "ack": {
                Object[] held = consumers.get(w[1]);
                ClientMessage m = (ClientMessage) held[2];
                if (w[2].equals("1")) {
                    m.individualAcknowledge();
                } else {
                    serverConsumer(server, (String) held[0], (ClientConsumer) held[1])
                        .individualAcknowledge(true, null, m.getMessageID());
                    ackCompleted(server);
                }
                return "";
            }
            case "release": {
                Object[] held = consumers.containsKey(w[1]) ? consumers.remove(w[1]) : kept.remove(w[1]);
                ((ClientConsumer) held[1]).close();
                return "";
            }
            case "consume": {
                ClientConsumer consumer = sessions.get(w[1]).createConsumer(new SimpleString(w[3]), null,
                    Integer.parseInt(w[4]), -1, false);
                kept.put(w[2], new Object[] {w[1], consumer, new java.util.ArrayList<ClientMessage>()});
                return "";
            }
            case "next": {
                Object[] held = kept.get(w[1]);
                ClientConsumer consumer = (ClientConsumer) held[1];
                // receive(wait), not receiveImmediate: the adapter asks only with a message pending, and a
                // forced delivery's marker could arrive after the message and stay in the buffer, where
                // a rollback's clear would return credits for it (ClientConsumerImpl#clear)
                ClientMessage m = consumer.receive(Long.parseLong(w[3]));
                // the credits a receive returns go out on the flow-control executor: wait for them to
                // be sent, then for the server to have taken them (a blocking round trip on the session)
                ((org.hornetq.utils.ReusableLatch) field(consumer, "pendingFlowControl")).await(5000);
                sessions.get((String) held[0]).queueQuery(new SimpleString("mqc-none"));
                if (m == null) {
                    return "none";
                }
                @SuppressWarnings("unchecked")
                java.util.List<ClientMessage> received = (java.util.List<ClientMessage>) held[2];
                received.add(m);
                return m.getObjectProperty(new SimpleString(w[2])) + " "
                    + ((org.hornetq.core.client.impl.ClientMessageInternal) m).getFlowControlSize();
            }
            case "ackupto":
            case "ackone": {
                Object[] held = kept.get(w[1]);
                @SuppressWarnings("unchecked")
                java.util.List<ClientMessage> received = (java.util.List<ClientMessage>) held[2];
                ClientMessage m = null;
                for (ClientMessage r : received) {
                    if (w[2].equals(String.valueOf(r.getObjectProperty(new SimpleString("mqcid"))))) {
                        m = r;
                    }
                }
                if (m == null) {
                    throw new IllegalStateException("not held: " + w[2]);
                }
                boolean upTo = w[0].equals("ackupto");
                if (w[3].equals("1")) {
                    if (upTo) {
                        m.acknowledge();
                    } else {
                        m.individualAcknowledge();
                    }
                } else {
                    ServerConsumer sc = serverConsumer(server, (String) held[0], (ClientConsumer) held[1]);
                    if (upTo) {
                        sc.acknowledge(true, null, m.getMessageID());
                    } else {
                        sc.individualAcknowledge(true, null, m.getMessageID());
                    }
                    ackCompleted(server);
                }
                if (upTo) {
                    received.subList(0, received.indexOf(m) + 1).clear();
                } else {
                    received.remove(m);
                }
                return "";
            }
            case "commit":
                sessions.get(w[1]).commit();
                return "";
            case "rollback":
                sessions.get(w[1]).rollback();
                forgetReceived(w[1], false);
                return "";
            case "endsession": {
                ClientSession session = sessions.remove(w[1]);
                String name = ((ClientSessionInternal) session).getName();
                session.close();
                forgetReceived(w[1], true);
                // the server closes the session (rolls its transaction back) once its I/O completes
                // (ServerSessionImpl#close): wait for it, at most 5 s
                long deadline = System.nanoTime() + 5_000_000_000L;
                while (serverSession(server, name) != null && System.nanoTime() < deadline) {
                    Thread.sleep(5);
                }
                return "";
            }
            case "producer": {
                ClientSession session = producerFactory.createSession(false, true, true);
                org.hornetq.api.core.client.ClientProducer producer = session.createProducer(new SimpleString(w[1]));
                producers.put(w.length > 2 ? w[2] : w[1], new Object[] {session, producer,
                    java.util.concurrent.Executors.newSingleThreadExecutor(),
                    new java.util.ArrayDeque<java.util.concurrent.Future<?>>(), w[1]});
                return "";
            }
            case "bsend": {
                Object[] p = producers.get(w[1]);
                ClientMessage m = ((ClientSession) p[0]).createMessage(true);
                m.putStringProperty(new SimpleString("mqcid"), new SimpleString(w[2]));
                m.putStringProperty(new SimpleString("p"), new SimpleString("x".repeat(Integer.parseInt(w[3]))));
                m.getBodyBuffer().writeBytes(new byte[Integer.parseInt(w[4])]);
                org.hornetq.api.core.client.ClientProducer producer = (org.hornetq.api.core.client.ClientProducer) p[1];
                @SuppressWarnings("unchecked")
                java.util.ArrayDeque<java.util.concurrent.Future<?>> sends = (java.util.ArrayDeque<java.util.concurrent.Future<?>>) p[3];
                PagingStore store = server.getPagingManager().getPageStore(new SimpleString((String) p[4]));
                sends.add(((java.util.concurrent.ExecutorService) p[2]).submit(() -> {
                    // the send asks for its credits (ClientProducerCreditsImpl#acquireCredits) only once the
                    // store's executor ran what it held: a MemoryFreedRunnablesExecutor loop that granted the
                    // previous send polls again before it ends, and would run this request too although
                    // that send filled the address again (docs/adapters/hornetq.md, BLOCK)
                    drain(store);
                    producer.send(m);
                    return null;
                }));
                return settle(server, w[1]) == 0 ? "accepted" : "blocked";
            }
            case "unproducer": {
                Object[] p = producers.remove(w[1]);
                if (p != null) {
                    ((ClientSession) p[0]).close();  // releases a send waiting for credits
                    ((java.util.concurrent.ExecutorService) p[2]).shutdownNow();
                }
                return "";
            }
            case "bsettle":
                return Integer.toString(producers.containsKey(w[1]) ? settle(server, w[1]) : 0);
            case "pagecounter": {
                // the page counter MessagesAdded adds (QueueImpl#getInstantMessagesAdded), and whether page
                // mode was cleared since the queue last paged (PageSubscriptionImpl#onPageModeCleared resets
                // the counter and sets `empty`): an ack that ends page mode races that reset (finding 4).
                // The page cleanup moves a page's non-transactional count into the counter in two steps
                // (PageSubscriptionCounterImpl#cleanupNonTXCounters): read until two reads 5 ms apart agree,
                // as `counters` does
                Queue q = queue(server, w[1]);
                org.hornetq.core.paging.cursor.PageSubscription sub = q.getPageSubscription();
                String last = null;
                for (int round = 0; round < 200; round++) {
                    flush(q);
                    String now = sub.getCounter().getValue() + " " + ((Boolean) field(sub, "empty") ? 1 : 0);
                    if (now.equals(last)) {
                        break;
                    }
                    last = now;
                    Thread.sleep(5);
                }
                return last;
            }
            case "refsize":
                return Integer.toString(MessageReferenceImpl.getMemoryEstimate());
            default:
                throw new IllegalArgumentException("unknown command " + w[0]);
        }
    }

    /** An ack made here, outside a session, commits its own transaction on this thread, and the commit's
     * afterCommit (the page counter's decrement of a paged message: PageSubscriptionCounterImpl
     * CounterOperations, read by MessagesAdded and MessageCount) runs when the journal completes it
     * (TransactionImpl#commit -> afterCompleteOperations): wait for this thread's operation context,
     * as a blocking core ack's response does. */
    static void ackCompleted(HornetQServer server) throws Exception {
        if (!server.getStorageManager().waitOnOperations(5000)) {
            throw new IllegalStateException("the ack's journal operations did not complete in 5 s");
        }
    }

    /** Wait (at most 5 s) until the paging store's executor ran what was handed to it before: among it
     * the MemoryFreedRunnablesExecutor that PagingStoreImpl#addSize schedules once the address is back
     * under max-size-bytes (an ordered executor: this task runs after that loop ended). */
    static void drain(PagingStore store) throws Exception {
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
        ((java.util.concurrent.Executor) field(store, "executor")).execute(done::countDown);
        if (!done.await(5, java.util.concurrent.TimeUnit.SECONDS)) {
            throw new IllegalStateException("the paging store's executor did not run in 5 s");
        }
    }

    /** Wait until the depage runner (page subscription executor) and then the queue's executor
     * (getMessageCount flushes it) have run what was submitted before. */
    static void flush(Queue q) throws Exception {
        for (int round = 0; round < 2 && q.getPageSubscription() != null; round++) {
            java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
            q.getPageSubscription().getExecutor().execute(done::countDown);
            done.await(5, java.util.concurrent.TimeUnit.SECONDS);
            q.getMessageCount();
        }
    }

    /** Paged messages while the queue's memory is below the address max-size and no depage is
     * scheduled (QueueImpl#checkDepage would schedule one): the broker has not settled. */
    static boolean owesDepage(Queue q) throws Exception {
        if (q.getPageSubscription() == null || !q.getPageSubscription().isPaging()
                || q.getPageSubscription().getMessageCount() <= 0) {
            return false;
        }
        long memory = ((Number) field(q, "queueMemorySize")).longValue();
        return memory < q.getPageSubscription().getPagingStore().getMaxSize() && !(Boolean) field(q, "depagePending");
    }

    /** No queue bound to the address holds a message (getMessageCount: in memory, delivering,
     * scheduled and paged). */
    static boolean addressEmpty(HornetQServer server, SimpleString address) throws Exception {
        for (org.hornetq.core.postoffice.Binding b
                : server.getPostOffice().getBindingsForAddress(address).getBindings()) {
            if (b instanceof org.hornetq.core.postoffice.QueueBinding
                    && ((org.hornetq.core.postoffice.QueueBinding) b).getQueue().getMessageCount() > 0) {
                return false;
            }
        }
        return true;
    }

    /** Wait (at most 5 s) until the address's sends went through, or the first one left waits for
     * credits the paging store holds back (BLOCK, full: PagingStoreImpl#checkMemory); the number of
     * sends not through. */
    static int settle(HornetQServer server, String key) throws Exception {
        Object[] p = producers.get(key);
        @SuppressWarnings("unchecked")
        java.util.ArrayDeque<java.util.concurrent.Future<?>> sends = (java.util.ArrayDeque<java.util.concurrent.Future<?>>) p[3];
        PagingStore store = server.getPagingManager().getPageStore(new SimpleString((String) p[4]));
        org.hornetq.core.client.impl.ClientProducerCredits credits =
            ((org.hornetq.core.client.impl.ClientProducerInternal) p[1]).getProducerCredits();
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (true) {
            while (!sends.isEmpty() && sends.peek().isDone()) {
                sends.poll().get();  // a send that failed throws here
            }
            if (sends.isEmpty()) {
                return 0;
            }
            boolean held = credits.isBlocked() && !((java.util.Queue<?>) field(store, "onMemoryFreedRunnables")).isEmpty()
                && store.getAddressSize() > store.getMaxSize();
            // held back: its credit request waits in the store (run only once the size is under the
            // limit again, PagingStoreImpl#addSize), so no grant is on its way
            if (held) {
                return sends.size();
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("a send neither went through nor waits for credits");
            }
            Thread.sleep(1);
        }
    }

    /** What the kept consumers of session s received is held no more (a rollback returned it, or
     * the session closed: then the consumers are gone too). */
    static void forgetReceived(String s, boolean closed) {
        for (java.util.Iterator<Object[]> it = kept.values().iterator(); it.hasNext();) {
            Object[] held = it.next();
            if (held[0].equals(s)) {
                ((java.util.List<?>) held[2]).clear();
                if (closed) {
                    it.remove();
                }
            }
        }
    }

    /** The server session of a client session (by name), or null once it is closed. */
    static ServerSession serverSession(HornetQServer server, String name) {
        for (ServerSession s : server.getSessions()) {
            if (s.getName().equals(name)) {
                return s;
            }
        }
        return null;
    }

    static ServerConsumer serverConsumer(HornetQServer server, String session, ClientConsumer consumer) {
        long id = ((ClientConsumerInternal) consumer).getID();
        for (ServerConsumer c : serverSession(server, ((ClientSessionInternal) sessions.get(session)).getName()).getServerConsumers()) {
            if (c.getID() == id) {
                return c;
            }
        }
        throw new IllegalStateException("no server consumer " + id);
    }

    /** The references of queue q acknowledged in an open session transaction (still delivering). */
    static java.util.List<MessageReference> inTransactions(HornetQServer server, Queue q) throws Exception {
        java.util.List<MessageReference> out = new java.util.ArrayList<>();
        for (ServerSession s : server.getSessions()) {
            Transaction tx = s.getCurrentTransaction();
            Object op = tx == null ? null : tx.getProperty(TransactionPropertyIndexes.REFS_OPERATION);
            if (op == null) {
                continue;
            }
            synchronized (op) {
                for (Object ref : (java.util.List<?>) field(op, "refsToAck")) {
                    if (((MessageReference) ref).getQueue() == q) {
                        out.add((MessageReference) ref);
                    }
                }
            }
        }
        return out;
    }

    static Object field(Object target, String name) throws Exception {
        java.lang.reflect.Field f = target.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
    }

    static String counters(Queue q) {
        long count = q.getMessageCount();
        long paged = q.getPageSubscription() == null ? 0 : q.getPageSubscription().getMessageCount();
        return count + " " + q.getDeliveringCount() + " " + q.getScheduledCount() + " " + q.getMessagesAdded()
            + " " + paged + " " + inMemory(q, null).size();
    }

    static Queue queue(HornetQServer server, String name) throws Exception {
        Queue q = server.locateQueue(new SimpleString(name));
        if (q == null) {
            throw new IllegalArgumentException("no queue " + name);
        }
        return q;
    }

    /** The pending in-memory references of a queue in queue order (QueueImpl#iterator), as values of
     * property `prop` (or their message ids when null). */
    static java.util.List<String> inMemory(Queue q, String prop) {
        java.util.List<String> out = new java.util.ArrayList<>();
        synchronized (q) {
            LinkedListIterator<MessageReference> it = q.iterator();
            try {
                while (it.hasNext()) {
                    MessageReference ref = it.next();
                    Object v = prop == null ? ref.getMessage().getMessageID()
                        : ref.getMessage().getObjectProperty(new SimpleString(prop));
                    out.add(String.valueOf(v));
                }
            } finally {
                it.close();
            }
        }
        return out;
    }
}
