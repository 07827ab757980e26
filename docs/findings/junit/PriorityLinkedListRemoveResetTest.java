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
 * The method {@link #testIteratorPicksUpHigherPriorityAfterLevelEmptied()} is meant for
 * artemis-server/src/test/.../core/list/PriorityLinkedListTest.java, beside testMixupIterator3
 * (ARTEMIS-4985); it uses that class' {@code list} and its elements a, b, c, d. The fixture below
 * stands in for PriorityLinkedListTest's so that the method runs on its own against an
 * artemis-commons jar.
 */
public final class PriorityLinkedListRemoveResetTest {

   record Wibble(String s1, long id) {
   }

   protected Wibble a;

   protected Wibble b;

   protected Wibble c;

   protected Wibble d;

   private PriorityLinkedListImpl<Wibble> list;

   @BeforeEach
   public void setUp() {
      list = new PriorityLinkedListImpl<>(10);

      a = new Wibble("a", 1);
      b = new Wibble("b", 2);
      c = new Wibble("c", 3);
      d = new Wibble("d", 4);
   }

   /*
    * The iterator's remove() empties level 5 and leaves highestPriority at 5; the next add at 5 is then
    * neither a new priority nor above highestPriority, so the iterators are not reset and the one that
    * moved down to level 4 hands out b before d.
    */
   @Test
   public void testIteratorPicksUpHigherPriorityAfterLevelEmptied() {
      list.addTail(a, 4);
      list.addTail(b, 4);
      list.addTail(c, 5);

      LinkedListIterator<Wibble> iter = list.iterator();

      assertTrue(iter.hasNext());
      assertEquals(c, iter.next());
      iter.remove();

      assertTrue(iter.hasNext());
      assertEquals(a, iter.next());
      iter.remove();

      // the same priority as the last add, and above everything left in the list
      list.addTail(d, 5);

      assertTrue(iter.hasNext());
      assertEquals(d, iter.next(), "d (priority 5) must come before b (priority 4)");
      assertTrue(iter.hasNext());
      assertEquals(b, iter.next());
   }
}
