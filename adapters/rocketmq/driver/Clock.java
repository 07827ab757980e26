// The clock the patched broker classes read instead of the wall clock (see BrokerDriver.java): the
// wall clock until the driver sets a logical instant, then that instant until the driver moves it.
package mqconform.rocketmq;

public final class Clock {
    private static volatile long frozen = -1;

    private Clock() {
    }

    public static long now() {
        long at = frozen;
        return at >= 0 ? at : System.currentTimeMillis();
    }

    static void set(long at) {
        frozen = at;
    }
}
