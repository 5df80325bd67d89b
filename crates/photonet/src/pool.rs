//! A pool of packets or cells addressed by `u32` index, and intrusive FIFO lists
//! threaded through it.
//!
//! A fabric holds many queues (per port, per destination, per priority) of
//! items that move between them. Allocating a `Box` or a `VecDeque` slot per
//! item costs an allocation and a pointer chase per hop; here an item is
//! allocated once in the [`Pool`] and moves from [`List`] to [`List`] by
//! rewriting one link. A `List` is 12 bytes and `Copy`, so a fabric can keep
//! millions of them in a `Vec`.
//!
//! # Costs
//! Struct of arrays: `items: Vec<T>` and `next: Vec<u32>` (4 bytes per slot),
//! plus a free list of released indices. `alloc`, `release`, `push_back`,
//! `push_front`, `pop_front` and `append` are O(1) and allocate nothing once
//! the pool has reached its high-water mark. Memory is the high-water mark of
//! live items, never returned until the pool is dropped.
//!
//! `release` is in place: the item's value stays in its slot (and is dropped)
//! only when the slot is reused or the pool is dropped, so `T` should be plain
//! data. The `next` word doubles as a state tag: releasing a released index
//! panics (always — it is one load), and in debug builds `get` on a released
//! index, pushing an item that is already in a list, or releasing one that
//! still is, panic too.

use std::ops::{Index, IndexMut};

/// "No item": the end of a list.
pub const NIL: u32 = u32::MAX;
/// `next` of an allocated item that is in no list.
const DETACHED: u32 = u32::MAX - 1;
/// `next` of a released slot.
const FREED: u32 = u32::MAX - 2;

/// An intrusive FIFO of pool indices. Only meaningful with the pool it was
/// filled from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct List {
    head: u32,
    tail: u32,
    len: u32,
}

impl List {
    pub const EMPTY: List = List {
        head: NIL,
        tail: NIL,
        len: 0,
    };
    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The first item, if any.
    pub fn front(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }
}

impl Default for List {
    fn default() -> Self {
        List::EMPTY
    }
}

/// Items addressed by `u32` index with a free list.
#[derive(Debug)]
pub struct Pool<T> {
    items: Vec<T>,
    next: Vec<u32>,
    free: Vec<u32>,
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Pool<T> {
    pub fn new() -> Self {
        Self::with_capacity(0)
    }
    pub fn with_capacity(n: usize) -> Self {
        Pool {
            items: Vec::with_capacity(n),
            next: Vec::with_capacity(n),
            free: Vec::new(),
        }
    }

    /// Stores `item` and returns its index. The item is in no list.
    pub fn alloc(&mut self, item: T) -> u32 {
        if let Some(i) = self.free.pop() {
            self.items[i as usize] = item;
            self.next[i as usize] = DETACHED;
            i
        } else {
            let i = self.items.len() as u32;
            assert!(i < FREED, "pool full");
            self.items.push(item);
            self.next.push(DETACHED);
            i
        }
    }

    /// Frees `i` for reuse. Panics if `i` is already free.
    pub fn release(&mut self, i: u32) {
        let n = &mut self.next[i as usize];
        assert!(*n != FREED, "pool index {i} released twice");
        debug_assert!(*n == DETACHED, "releasing pool index {i} while in a list");
        *n = FREED;
        self.free.push(i);
    }

    pub fn get(&self, i: u32) -> &T {
        debug_assert!(self.next[i as usize] != FREED, "pool index {i} is free");
        &self.items[i as usize]
    }
    pub fn get_mut(&mut self, i: u32) -> &mut T {
        debug_assert!(self.next[i as usize] != FREED, "pool index {i} is free");
        &mut self.items[i as usize]
    }

    /// The value last stored in slot `i`, live or released (a released
    /// slot keeps it until reused); None if `i` was never allocated.
    pub fn get_any(&self, i: u32) -> Option<&T> {
        self.items.get(i as usize)
    }

    /// Items allocated and not released.
    pub fn live(&self) -> usize {
        self.items.len() - self.free.len()
    }
    /// Most items ever live at once (the slots the pool holds).
    pub fn high_water(&self) -> usize {
        self.items.len()
    }

    /// Appends item `i` (which must be in no list) to `list`.
    pub fn push_back(&mut self, list: &mut List, i: u32) {
        debug_assert!(
            self.next[i as usize] == DETACHED,
            "pool index {i} not detached"
        );
        self.next[i as usize] = NIL;
        if list.tail == NIL {
            list.head = i;
        } else {
            self.next[list.tail as usize] = i;
        }
        list.tail = i;
        list.len += 1;
    }

    /// Puts item `i` (which must be in no list) at the head of `list`.
    pub fn push_front(&mut self, list: &mut List, i: u32) {
        debug_assert!(
            self.next[i as usize] == DETACHED,
            "pool index {i} not detached"
        );
        self.next[i as usize] = list.head;
        if list.tail == NIL {
            list.tail = i;
        }
        list.head = i;
        list.len += 1;
    }

    /// Removes the first item of `list`; it is then in no list.
    pub fn pop_front(&mut self, list: &mut List) -> Option<u32> {
        let i = list.front()?;
        list.head = std::mem::replace(&mut self.next[i as usize], DETACHED);
        if list.head == NIL {
            list.tail = NIL;
        }
        list.len -= 1;
        Some(i)
    }

    /// Moves every item of `other` to the back of `list`, in O(1).
    pub fn append(&mut self, list: &mut List, other: &mut List) {
        if other.is_empty() {
            return;
        }
        if list.tail == NIL {
            list.head = other.head;
        } else {
            self.next[list.tail as usize] = other.head;
        }
        list.tail = other.tail;
        list.len += other.len;
        *other = List::EMPTY;
    }

    /// Indices of `list`, front to back.
    pub fn iter<'a>(&'a self, list: &List) -> impl Iterator<Item = u32> + 'a {
        let mut cur = list.head;
        std::iter::from_fn(move || {
            let i = (cur != NIL).then_some(cur)?;
            cur = self.next[i as usize];
            Some(i)
        })
    }
}

impl<T> Index<u32> for Pool<T> {
    type Output = T;
    fn index(&self, i: u32) -> &T {
        self.get(i)
    }
}
impl<T> IndexMut<u32> for Pool<T> {
    fn index_mut(&mut self, i: u32) -> &mut T {
        self.get_mut(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    #[test]
    fn fifo_through_the_pool_reuses_slots() {
        let mut p = Pool::new();
        let (mut a, mut b) = (List::EMPTY, List::EMPTY);
        for v in 0..3 {
            let i = p.alloc(v);
            p.push_back(&mut a, i);
        }
        while let Some(i) = p.pop_front(&mut a) {
            p[i] *= 10;
            p.push_back(&mut b, i);
        }
        let got: Vec<_> = p.iter(&b).map(|i| p[i]).collect();
        assert_eq!((got, a.len(), b.front()), (vec![0, 10, 20], 0, Some(0)));
        while let Some(i) = p.pop_front(&mut b) {
            p.release(i);
        }
        assert_eq!(p.live(), 0);
        p.alloc(7);
        assert_eq!((p.live(), p.high_water()), (1, 3));
    }

    #[test]
    #[should_panic(expected = "released twice")]
    fn double_release_panics() {
        let mut p = Pool::new();
        let i = p.alloc(());
        p.release(i);
        p.release(i);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "not detached")]
    fn pushing_an_item_onto_two_lists_panics_in_debug() {
        let mut p = Pool::new();
        let (mut a, mut b) = (List::EMPTY, List::EMPTY);
        let i = p.alloc(());
        p.push_back(&mut a, i);
        p.push_back(&mut b, i);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Alloc(usize, bool),
        PopFront(usize, bool),
        Append(usize, usize),
    }

    const LISTS: usize = 4;

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..LISTS, any::<bool>()).prop_map(|(l, f)| Op::Alloc(l, f)),
            3 => (0..LISTS, any::<bool>()).prop_map(|(l, r)| Op::PopFront(l, r)),
            1 => (0..LISTS, 0..LISTS).prop_map(|(a, b)| Op::Append(a, b)),
        ]
    }

    proptest! {
        /// Several lists against VecDeque oracles; popped items are either
        /// released or moved to the next list. Live count is conserved.
        #[test]
        fn lists_match_vecdeque_oracles(ops in prop::collection::vec(op(), 1..500)) {
            let mut p = Pool::new();
            let mut lists = [List::EMPTY; LISTS];
            let mut oracle: [VecDeque<u64>; LISTS] = Default::default();
            let mut counter = 0u64;
            for op in ops {
                match op {
                    Op::Alloc(l, front) => {
                        counter += 1;
                        let i = p.alloc(counter);
                        if front {
                            p.push_front(&mut lists[l], i);
                            oracle[l].push_front(counter);
                        } else {
                            p.push_back(&mut lists[l], i);
                            oracle[l].push_back(counter);
                        }
                    }
                    Op::PopFront(l, release) => {
                        let got = p.pop_front(&mut lists[l]).map(|i| (i, p[i]));
                        prop_assert_eq!(got.map(|g| g.1), oracle[l].pop_front());
                        if let Some((i, v)) = got {
                            if release {
                                p.release(i);
                            } else {
                                let m = (l + 1) % LISTS;
                                p.push_back(&mut lists[m], i);
                                oracle[m].push_back(v);
                            }
                        }
                    }
                    Op::Append(a, b) if a != b => {
                        let mut other = lists[b];
                        p.append(&mut lists[a], &mut other);
                        lists[b] = other;
                        let moved: Vec<_> = oracle[b].drain(..).collect();
                        oracle[a].extend(moved);
                    }
                    Op::Append(..) => {}
                }
                let mut total = 0;
                for (l, o) in lists.iter().zip(&oracle) {
                    let got: Vec<u64> = p.iter(l).map(|i| p[i]).collect();
                    prop_assert_eq!(&got, &o.iter().copied().collect::<Vec<_>>());
                    prop_assert_eq!((l.len(), l.is_empty()), (o.len(), o.is_empty()));
                    total += o.len();
                }
                prop_assert_eq!(p.live(), total);
            }
        }
    }
}
