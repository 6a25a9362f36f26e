//! Bit layouts of 64-bit snowflake IDs: ours (configurable) and named presets of other systems.
//!
//! PURE: no pgrx here, so `cargo test` reaches every line.
//!
//! Every layout handled here stores, from the most significant bit down, the time since an
//! epoch in milliseconds, then the node, then the per-millisecond counter. Unused high bits
//! (the sign bit of our layout) must be zero.

/// Milliseconds of the Unix epoch are the common currency between layouts.
pub type UnixMs = i64;

/// How the 64 bits of an ID are split, and from when the time field counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub time_bits: u32,
    pub node_bits: u32,
    pub counter_bits: u32,
    pub epoch_ms: UnixMs,
}

/// An ID taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// Milliseconds since the layout's epoch.
    pub ms: u64,
    pub node: u32,
    pub counter: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutError {
    /// The ID has bits set above the layout's time field (for ours: it is negative).
    BitsAboveTime,
    /// The timestamp is before the epoch or past the last millisecond the time field holds.
    TimeOutOfRange,
    /// A node number does not fit the node field.
    NodeOutOfRange,
}

/// Time bits of our own layout. With the sign bit this leaves 22 bits for node and counter.
pub const OWN_TIME_BITS: u32 = 41;
/// Node and counter share what the sign bit and the time field leave.
pub const OWN_NODE_AND_COUNTER_BITS: u32 = 63 - OWN_TIME_BITS;
/// Node widths we accept: 128 to 8192 nodes, keeping at least 512 IDs per millisecond.
pub const MIN_NODE_BITS: u32 = 7;
pub const MAX_NODE_BITS: u32 = 13;
pub const DEFAULT_NODE_BITS: u32 = 10;
/// The default epoch, 2025-01-01 00:00:00 UTC, in Unix milliseconds (`epoch` parses the
/// setting's text; a test there checks that the two agree).
pub const DEFAULT_EPOCH_MS: UnixMs = 1_735_689_600_000;

impl Layout {
    /// Our layout for a node width already checked against [`MIN_NODE_BITS`]..=[`MAX_NODE_BITS`].
    pub const fn own(node_bits: u32, epoch_ms: UnixMs) -> Layout {
        Layout {
            time_bits: OWN_TIME_BITS,
            node_bits,
            counter_bits: OWN_NODE_AND_COUNTER_BITS - node_bits,
            epoch_ms,
        }
    }

    pub const fn total_bits(&self) -> u32 {
        self.time_bits + self.node_bits + self.counter_bits
    }

    pub const fn max_node(&self) -> u32 {
        ((1u64 << self.node_bits) - 1) as u32
    }

    pub const fn max_counter(&self) -> u32 {
        ((1u64 << self.counter_bits) - 1) as u32
    }

    pub const fn max_ms(&self) -> u64 {
        (1u64 << self.time_bits) - 1
    }

    /// Width of the generator's tick: time and counter, without the node in between.
    pub const fn tick_bits(&self) -> u32 {
        self.time_bits + self.counter_bits
    }

    /// The largest tick: the last counter value of the last millisecond.
    pub const fn max_tick(&self) -> u64 {
        if self.tick_bits() == 64 {
            u64::MAX
        } else {
            (1u64 << self.tick_bits()) - 1
        }
    }

    pub fn decode(&self, id: u64) -> Result<Parts, LayoutError> {
        let total = self.total_bits();
        if total < 64 && id >> total != 0 {
            return Err(LayoutError::BitsAboveTime);
        }
        let low = self.node_bits + self.counter_bits;
        Ok(Parts {
            ms: id >> low,
            node: ((id >> self.counter_bits) & u64::from(self.max_node())) as u32,
            counter: (id & u64::from(self.max_counter())) as u32,
        })
    }

    pub fn encode(&self, parts: Parts) -> Result<u64, LayoutError> {
        if parts.ms > self.max_ms() {
            return Err(LayoutError::TimeOutOfRange);
        }
        if parts.node > self.max_node() {
            return Err(LayoutError::NodeOutOfRange);
        }
        debug_assert!(parts.counter <= self.max_counter());
        Ok((parts.ms << (self.node_bits + self.counter_bits))
            | (u64::from(parts.node) << self.counter_bits)
            | u64::from(parts.counter))
    }

    /// The Unix time of an ID's millisecond.
    pub fn unix_ms(&self, parts: Parts) -> UnixMs {
        // ms < 2^42 and epochs are within a few centuries of 1970: no overflow.
        self.epoch_ms + parts.ms as i64
    }

    /// Milliseconds since the epoch of a Unix time, if the time field can hold it.
    pub fn ms_since_epoch(&self, unix_ms: UnixMs) -> Result<u64, LayoutError> {
        let ms = unix_ms
            .checked_sub(self.epoch_ms)
            .ok_or(LayoutError::TimeOutOfRange)?;
        if ms < 0 || ms as u64 > self.max_ms() {
            return Err(LayoutError::TimeOutOfRange);
        }
        Ok(ms as u64)
    }

    /// The smallest ID any node can give in the millisecond of `unix_ms`, so that
    /// `id >= min_id_at(t)` selects exactly the IDs made at or after `t`.
    pub fn min_id_at(&self, unix_ms: UnixMs) -> Result<u64, LayoutError> {
        let ms = self.ms_since_epoch(unix_ms)?;
        self.encode(Parts {
            ms,
            node: 0,
            counter: 0,
        })
    }

    /// The ID of a generator tick (`ms << counter_bits | counter`) made on `node`.
    #[inline]
    pub fn id_of_tick(&self, tick: u64, node: u32) -> u64 {
        let ms = tick >> self.counter_bits;
        let counter = tick & u64::from(self.max_counter());
        (ms << (self.node_bits + self.counter_bits))
            | (u64::from(node) << self.counter_bits)
            | counter
    }
}

/// A named layout of another system, for decoding its IDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub layout: Layout,
}

/// Sources, so the figures can be checked:
/// - twitter: the 2010 announcement and twitter-archive/snowflake: 41-bit ms since
///   1288834974657, 10-bit worker (datacenter 5 + worker 5), 12-bit sequence.
/// - discord: Discord API reference "Snowflakes": 42-bit ms since 1420070400000 (2015),
///   internal worker 5 + process 5 bits, 12-bit increment.
/// - instagram: "Sharding & IDs at Instagram": 41-bit ms since 1314220021721, 13-bit shard,
///   10-bit sequence.
/// - pgedge: pgEdge snowflake 2.0 to 2.6, snowflake.c: ms << 22 | node << 12 | count, epoch
///   2023-01-01 (1672531200 s). Its README's older text puts the counter above the node; the
///   source of every 2.x release does not.
/// - snowflake_id: this extension's own layout under the default settings, so that IDs of a
///   server on the defaults have IMMUTABLE decoders and bounds (partition pruning at plan
///   time).
pub const PRESETS: [Preset; 5] = [
    Preset {
        name: "twitter",
        layout: Layout {
            time_bits: 41,
            node_bits: 10,
            counter_bits: 12,
            epoch_ms: 1_288_834_974_657,
        },
    },
    Preset {
        name: "discord",
        layout: Layout {
            time_bits: 42,
            node_bits: 10,
            counter_bits: 12,
            epoch_ms: 1_420_070_400_000,
        },
    },
    Preset {
        name: "instagram",
        layout: Layout {
            time_bits: 41,
            node_bits: 13,
            counter_bits: 10,
            epoch_ms: 1_314_220_021_721,
        },
    },
    Preset {
        name: "pgedge",
        layout: Layout {
            time_bits: 41,
            node_bits: 10,
            counter_bits: 12,
            epoch_ms: 1_672_531_200_000,
        },
    },
    Preset {
        name: "snowflake_id",
        layout: Layout::own(DEFAULT_NODE_BITS, DEFAULT_EPOCH_MS),
    },
];

/// Looks a preset up by name (bytes in the database's encoding), ignoring ASCII case and
/// surrounding blanks.
pub fn preset(name: &[u8]) -> Option<&'static Preset> {
    let name = name.trim_ascii();
    PRESETS
        .iter()
        .find(|p| p.name.as_bytes().eq_ignore_ascii_case(name))
}

/// The preset names, for an error message's hint.
pub fn preset_names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testrng::Rng;

    impl Layout {
        /// The generator tick (`ms << counter_bits | counter`) of an ID's parts.
        fn tick_of(&self, parts: Parts) -> u64 {
            (parts.ms << self.counter_bits) | u64::from(parts.counter)
        }
    }

    const EPOCH_2025: UnixMs = 1_735_689_600_000;

    #[test]
    fn own_layout_fills_63_bits_for_every_node_width() {
        for nb in MIN_NODE_BITS..=MAX_NODE_BITS {
            let l = Layout::own(nb, EPOCH_2025);
            assert_eq!(l.total_bits(), 63);
            assert_eq!(l.tick_bits(), 63 - nb);
        }
        let l = Layout::own(DEFAULT_NODE_BITS, EPOCH_2025);
        assert_eq!((l.node_bits, l.counter_bits), (10, 12));
    }

    #[test]
    fn encode_decode_round_trip_random() {
        let mut rng = Rng::new(7);
        for _ in 0..200_000 {
            let nb = MIN_NODE_BITS + rng.below(u64::from(MAX_NODE_BITS - MIN_NODE_BITS + 1)) as u32;
            let l = Layout::own(nb, EPOCH_2025);
            let p = Parts {
                ms: rng.below(l.max_ms() + 1),
                node: rng.below(u64::from(l.max_node()) + 1) as u32,
                counter: rng.below(u64::from(l.max_counter()) + 1) as u32,
            };
            let id = l.encode(p).unwrap();
            assert!(id < 1 << 63, "sign bit stays clear");
            assert_eq!(l.decode(id).unwrap(), p);
            // id_of_tick is the generator's fast path of the same mapping.
            let tick = (p.ms << l.counter_bits) | u64::from(p.counter);
            assert_eq!(l.tick_of(p), tick);
            assert_eq!(l.id_of_tick(tick, p.node), id);
        }
    }

    #[test]
    fn ids_order_by_time_then_node_then_counter() {
        let mut rng = Rng::new(11);
        let l = Layout::own(DEFAULT_NODE_BITS, EPOCH_2025);
        let key = |p: &Parts| (p.ms, p.node, p.counter);
        for _ in 0..100_000 {
            let mut draw = || Parts {
                ms: rng.below(1 << 20),
                node: rng.below(4) as u32,
                counter: rng.below(8) as u32,
            };
            let (a, b) = (draw(), draw());
            assert_eq!(
                key(&a).cmp(&key(&b)),
                l.encode(a).unwrap().cmp(&l.encode(b).unwrap())
            );
        }
    }

    #[test]
    fn min_id_at_is_a_lower_bound_of_its_millisecond() {
        let mut rng = Rng::new(3);
        let l = Layout::own(DEFAULT_NODE_BITS, EPOCH_2025);
        for _ in 0..100_000 {
            let p = Parts {
                ms: rng.below(l.max_ms() + 1),
                node: rng.below(u64::from(l.max_node()) + 1) as u32,
                counter: rng.below(u64::from(l.max_counter()) + 1) as u32,
            };
            let id = l.encode(p).unwrap();
            let floor = l.min_id_at(l.unix_ms(p)).unwrap();
            assert!(floor <= id);
            // and it is the greatest such bound: the millisecond before is entirely below it
            if p.ms > 0 {
                let prev_last = l
                    .encode(Parts {
                        ms: p.ms - 1,
                        node: l.max_node(),
                        counter: l.max_counter(),
                    })
                    .unwrap();
                assert!(prev_last < floor);
            }
        }
    }

    #[test]
    fn out_of_range_is_reported() {
        let l = Layout::own(DEFAULT_NODE_BITS, EPOCH_2025);
        assert_eq!(l.decode(1 << 63), Err(LayoutError::BitsAboveTime));
        assert_eq!(
            l.min_id_at(EPOCH_2025 - 1),
            Err(LayoutError::TimeOutOfRange)
        );
        assert_eq!(
            l.min_id_at(EPOCH_2025 + (1 << 41)),
            Err(LayoutError::TimeOutOfRange)
        );
        assert_eq!(l.min_id_at(i64::MIN), Err(LayoutError::TimeOutOfRange));
        assert!(l.min_id_at(EPOCH_2025 + (1 << 41) - 1).is_ok());
        let p = Parts {
            ms: 0,
            node: 1024,
            counter: 0,
        };
        assert_eq!(l.encode(p), Err(LayoutError::NodeOutOfRange));
    }

    #[test]
    fn presets_decode_published_examples() {
        // Discord API reference example: 175928847299117063 was made 2016-04-30 11:18:25.796 UTC
        // by internal worker 1, process 0, increment 7.
        let d = preset(b"Discord").unwrap().layout;
        let p = d.decode(175_928_847_299_117_063).unwrap();
        assert_eq!(d.unix_ms(p), 1_462_015_105_796);
        assert_eq!((p.node, p.counter), (1 << 5, 7));
        // Discord uses all 64 bits: the sign bit is time, not an error.
        assert!(d.decode(u64::MAX).is_ok());

        for p in PRESETS {
            assert!(p.layout.total_bits() <= 64, "{}", p.name);
        }
        assert!(preset(b" PGEDGE ").is_some());
        assert!(preset(b"sonyflake").is_none());
        assert_eq!(
            preset_names(),
            "twitter, discord, instagram, pgedge, snowflake_id"
        );
        // The extension's own preset is the default of its settings: an ID made with them
        // decodes the same through the preset.
        let own = preset(b"snowflake_id").unwrap().layout;
        assert_eq!(own, Layout::own(DEFAULT_NODE_BITS, DEFAULT_EPOCH_MS));
    }
}
