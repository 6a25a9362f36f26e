//! PURE (tests only): a mutation fuzzer for the three gdid parsers: text (`Gdid::parse`), the compact decoder
//! and the LEB128 decoder. Stable Rust has no cargo-fuzz, so this is the equivalent run: it
//! starts from the committed seeds in `fuzz/corpus/*`, mutates them (bit flips, byte edits,
//! splices, inserted tokens such as `:` and `0x`) and checks on every input that the parser
//! returns instead of panicking, and that whatever it accepts is canonical (re-encoding it
//! gives the input back, modulo surrounding whitespace and hex case for text).
//!
//! Run: `make fuzz` (FUZZ_SECONDS=600 by default). Any failing input is written to
//! `fuzz/crashes/` before the test fails.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::core::gdid::compact;
use crate::core::gdid::value::Gdid;
use crate::core::testrng::Rng;

const TOKENS: &[&[u8]] = &[
    b":",
    b"0x",
    b"0X",
    b" ",
    b"\t",
    b"-",
    b"+",
    b"0",
    b"9",
    b"15",
    b"16",
    b"4294967295",
    b"4294967296",
    b"1152921504606846975",
    b"1152921504606846976",
    b"\xff",
    b"\x80",
    b"\0",
];

fn corpus(dir: &str) -> Vec<Vec<u8>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(dir);
    let mut seeds: Vec<_> = std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    seeds.sort();
    seeds
}

fn mutate(rng: &mut Rng, input: &[u8], pool: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..=rng.below(4) {
        let at = |rng: &mut Rng, len: usize| rng.below(len as u64 + 1) as usize;
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len() as u64) as usize;
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len() as u64) as usize;
                v[i] = rng.next_u64() as u8;
            }
            2 if !v.is_empty() => {
                v.remove(rng.below(v.len() as u64) as usize);
            }
            3 => {
                let i = at(rng, v.len());
                v.insert(i, rng.next_u64() as u8);
            }
            4 => {
                let t = TOKENS[rng.below(TOKENS.len() as u64) as usize];
                let i = at(rng, v.len());
                v.splice(i..i, t.iter().copied());
            }
            5 => {
                let other = &pool[rng.below(pool.len() as u64) as usize];
                let (i, j) = (at(rng, v.len()), at(rng, other.len()));
                v.truncate(i);
                v.extend_from_slice(&other[j..]);
            }
            _ => {
                let i = at(rng, v.len());
                v.truncate(i);
            }
        }
    }
    v
}

/// One fuzz target: `Err` says what invariant the input broke.
type Check = fn(&[u8]) -> Result<(), String>;

fn check_text(input: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(input) else {
        return Ok(()); // gdid_in refuses anything but UTF-8 (ASCII) before parsing
    };
    if let Ok(g) = Gdid::parse(text) {
        let again = Gdid::parse(&g.to_string()).map_err(|e| format!("{e:?}"))?;
        if again != g || Gdid::parse(&g.to_hex()) != Ok(g) {
            return Err(format!("{text:?} parsed to {g}, which does not round-trip"));
        }
    }
    Ok(())
}

fn check_compact(input: &[u8]) -> Result<(), String> {
    match compact::decompress(input) {
        Ok(g) if compact::compress(g) != input => Err(format!("{input:02x?} is not canonical")),
        _ => Ok(()),
    }
}

fn check_leb128(input: &[u8]) -> Result<(), String> {
    match compact::from_leb128(input) {
        Ok(g) if compact::to_leb128(g) != input => Err(format!("{input:02x?} is not canonical")),
        _ => Ok(()),
    }
}

fn save_crash(kind: &str, input: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/crashes");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!(
        "{kind}-{:016x}",
        crate::core::crc32c::crc32c(input)
    ));
    std::fs::write(&path, input).unwrap();
    path
}

#[test]
#[ignore = "runs for FUZZ_SECONDS; use `make fuzz`"]
fn fuzz_gdid_parsers() {
    let seconds: u64 = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let targets: [(&str, Check); 3] = [
        ("text", check_text),
        ("compact", check_compact),
        ("leb128", check_leb128),
    ];
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut rng = Rng::new(std::process::id().into());
    let mut runs = [0u64; 3];
    while Instant::now() < deadline {
        for (t, (kind, check)) in targets.iter().enumerate() {
            let pool = corpus(kind);
            for _ in 0..100_000 {
                let seed = &pool[rng.below(pool.len() as u64) as usize];
                let input = mutate(&mut rng, seed, &pool);
                let outcome = std::panic::catch_unwind(|| check(&input));
                match outcome {
                    Ok(Ok(())) => runs[t] += 1,
                    Ok(Err(why)) => {
                        panic!("{kind}: {why}; saved to {:?}", save_crash(kind, &input))
                    }
                    Err(_) => panic!("{kind}: panicked; saved to {:?}", save_crash(kind, &input)),
                }
            }
        }
    }
    println!(
        "fuzz: {seconds} s, {} text, {} compact, {} LEB128 inputs, no failure",
        runs[0], runs[1], runs[2]
    );
}
