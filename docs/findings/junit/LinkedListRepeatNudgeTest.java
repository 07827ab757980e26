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
package org.apache.activemq.artemis.tests.unit.util;

import org.apache.activemq.artemis.utils.collections.LinkedListImpl;
import org.apache.activemq.artemis.utils.collections.LinkedListIterator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The method {@link #testRepeatAfterNudgeNoReplay()} is meant for
 * tests/unit-tests/.../tests/unit/util/LinkedListTest.java, beside testRemoveLastNudgeNoReplay
 * (ARTEMIS-3890); it uses only that class' {@code list} field. The setUp below stands in for
 * LinkedListTest's so that the method runs on its own against an artemis-commons jar.
 */
public class LinkedListRepeatNudgeTest {

   private LinkedListImpl<Integer> list;

   @BeforeEach
   public void setUp() {
      list = new LinkedListImpl<>();
   }

   /*
    * QueueImpl#deliver repeat()s its consumer's iterator when the consumer is BUSY; a ring queue then
    * poll()s its head to stay within ring-size. On a non-destructive queue the element handed out after
    * the repeat stays listed, so the iterator must know it returned it.
    */
   @Test
   public void testRepeatAfterNudgeNoReplay() {
      LinkedListIterator<Integer> iter = list.iterator();

      list.addTail(1);

      assertTrue(iter.hasNext());
      assertEquals(1, iter.next().intValue());

      iter.repeat();

      // the head goes (as a ring of size 1 replaces it): the iterator is nudged on to 2
      list.addTail(2);
      assertEquals(1, list.poll().intValue());

      // the pending repeat hands out 2
      assertTrue(iter.hasNext());
      assertEquals(2, iter.next().intValue());

      // 2 was returned and not repeated: the iterator must not replay it
      assertFalse(iter.hasNext(), "iterator replays 2 after the repeat returned it");
      assertEquals(1, list.size());
   }
}
