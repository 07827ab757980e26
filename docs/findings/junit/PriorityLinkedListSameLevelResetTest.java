/*
 * Licensed to the Apache Software Foundation (ASF) under one or more
 * contributor license agreements. See the NOTICE file distributed with
 * this work for additional information regarding copyright ownership.
 * The ASF licenses this file to You under the Apache License, Version 2.0
 * (the "License"); you may not use this file except in compliance with
 * the License. You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */
package org.apache.activemq.artemis.core.list;

import org.apache.activemq.artemis.utils.collections.LinkedListIterator;
import org.apache.activemq.artemis.utils.collections.PriorityLinkedListImpl;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The method {@link #testIteratorPicksUpSamePriorityAfterMovingDown()} is meant for
 * artemis-server/src/test/.../core/list/PriorityLinkedListTest.java, beside testMixupIterator
 * (the same walk, with the add before d at d's own priority); it uses that class' {@code list} and
 * its elements a, b, c. The fixture below stands in for PriorityLinkedListTest's so that the method
 * runs on its own against an artemis-commons jar.
 */
public final class PriorityLinkedListSameLevelResetTest {

   record Wibble(String s1, long id) {
   }

   protected Wibble a;

   protected Wibble b;

   protected Wibble c;

   private PriorityLinkedListImpl<Wibble> list;

   @BeforeEach
   public void setUp() {
      list = new PriorityLinkedListImpl<>(10);

      a = new Wibble("a", 1);
      b = new Wibble("b", 2);
      c = new Wibble("c", 3);
   }

   /*
    * A non-destructive queue's consumer only moves its iterator: b stays in the list, so
    * highestPriority stays at 9. The iterator moves down to level 0 and is told to repeat a (its
    * consumer is busy, as QueueImpl#deliver does); c is then added at 9, the same priority as the
    * last add and not above highestPriority, so the iterators are not reset and a comes before c.
    */
   @Test
   public void testIteratorPicksUpSamePriorityAfterMovingDown() {
      list.addTail(a, 0);
      list.addTail(b, 9);

      LinkedListIterator<Wibble> iter = list.iterator();

      assertTrue(iter.hasNext());
      assertEquals(b, iter.next());

      assertTrue(iter.hasNext());
      assertEquals(a, iter.next());
      iter.repeat();

      // the same priority as the last add, and not above highestPriority
      list.addTail(c, 9);

      assertTrue(iter.hasNext());
      assertEquals(c, iter.next(), "c (priority 9) must come before a (priority 0)");
      assertTrue(iter.hasNext());
      assertEquals(a, iter.next());
   }
}
