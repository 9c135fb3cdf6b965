//! The hook's deadline: a CLI that times its hook out lets the call run, so
//! toolgate must answer (with a deny) before that happens.
//!
//! The deadline is a `SIGALRM` timer rather than a thread: a hook starts once
//! per tool call, and a second thread (its stack, its malloc arena) costs a
//! hook more start time than anything it decides. When the timer cannot be
//! set, a thread keeps the same promise.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Set by whoever answers first: the hook with its decision, or the deadline
/// with a deny.
static ANSWERED: AtomicBool = AtomicBool::new(false);
/// The deny the deadline writes, formatted before the timer is armed so the
/// signal handler neither allocates nor formats.
static DEADLINE_MESSAGE: OnceLock<Vec<u8>> = OnceLock::new();

/// Arms the deadline: after `deadline_ms`, unless [`claim_answer`] came
/// first, the process writes a deny reason to stderr and exits 2.
pub fn start(deadline_ms: u64) {
    let message = format!("toolgate: no decision within {deadline_ms} ms; the call is denied\n");
    let _ = DEADLINE_MESSAGE.set(message.into_bytes());
    if !arm_timer(deadline_ms) {
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(deadline_ms));
            if !ANSWERED.swap(true, Ordering::SeqCst) {
                let _ = std::io::stderr().write_all(deadline_message());
                std::process::exit(2);
            }
        });
    }
}

/// Claims the right to answer. False when the deadline has already answered
/// (the process is exiting with its deny), in which case the caller must not
/// write anything.
pub fn claim_answer() -> bool {
    !ANSWERED.swap(true, Ordering::SeqCst)
}

fn deadline_message() -> &'static [u8] {
    DEADLINE_MESSAGE.get().map_or(&[][..], Vec::as_slice)
}

extern "C" fn on_deadline(_signal: libc::c_int) {
    if !ANSWERED.swap(true, Ordering::SeqCst) {
        let message = deadline_message();
        // SAFETY: write(2) and _exit(2) are async-signal-safe, and `message`
        // is a static buffer set before the timer was armed.
        unsafe {
            libc::write(2, message.as_ptr().cast(), message.len());
            libc::_exit(2);
        }
    }
}

/// Installs the handler and starts a one-shot real-time timer; false when
/// either fails.
fn arm_timer(deadline_ms: u64) -> bool {
    let deadline_ms = deadline_ms.max(1);
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the
    // handler only does async-signal-safe work (see `on_deadline`).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_deadline as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut()) != 0 {
            return false;
        }
        let timer = libc::itimerval {
            it_interval: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            it_value: libc::timeval {
                tv_sec: (deadline_ms / 1000).min(i32::MAX as u64) as libc::time_t,
                tv_usec: ((deadline_ms % 1000) * 1000) as libc::suseconds_t,
            },
        };
        libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) == 0
    }
}
