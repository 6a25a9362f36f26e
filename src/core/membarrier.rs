//! Linux's `membarrier(2)`, the one system call behind the unfenced entries of `phases`: a
//! process registers to receive global barriers, and a reclaimer makes every CPU that runs
//! a registered process execute a full memory barrier. Absent (an older kernel, a seccomp
//! filter), every call says so and readers keep their fence.
//!
//! PURE: no pgrx here (libc's syscall). Measured on the development VM: a global barrier
//! 0.5 us.

// linux/membarrier.h; not in the libc crate.
const CMD_QUERY: libc::c_long = 0;
const CMD_GLOBAL_EXPEDITED: libc::c_long = 1 << 1;
const CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_long = 1 << 2;

#[cfg(target_os = "linux")]
fn membarrier(cmd: libc::c_long) -> libc::c_long {
    // SAFETY: a system call with integer arguments only; an unknown command or a missing
    // system call returns -1.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) }
}

/// Elsewhere there is no such system call: every reader keeps its fence.
#[cfg(not(target_os = "linux"))]
fn membarrier(_cmd: libc::c_long) -> libc::c_long {
    -1
}

/// Whether this system offers registered global barriers.
pub fn supported() -> bool {
    let commands = membarrier(CMD_QUERY);
    let needed = CMD_GLOBAL_EXPEDITED | CMD_REGISTER_GLOBAL_EXPEDITED;
    commands >= 0 && commands & needed == needed
}

/// Registers this process (all its threads) to receive global barriers; false if it could not.
pub fn register() -> bool {
    membarrier(CMD_REGISTER_GLOBAL_EXPEDITED) == 0
}

/// A full memory barrier on every CPU that runs a registered process, done when this
/// returns true.
pub fn global() -> bool {
    membarrier(CMD_GLOBAL_EXPEDITED) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn registered_processes_receive_barriers() {
        // The development and CI machines have it; the extension works without it too.
        assert!(
            supported(),
            "membarrier's global expedited barrier is not offered here"
        );
        assert!(register());
        assert!(global());
    }
}
