//! Smooth arrivals for the load generator. Tokio's timers have a resolution of one millisecond,
//! so per-connection `sleep_until` sends every message due within a millisecond in one burst,
//! and the server handles the burst in one wake-up: cheaper per message than real traffic, whose
//! messages arrive one by one. The pacer instead releases each send at its own intended time
//! (at 20,000 msg/s, one every 50 µs), woken by a Linux `timerfd`, which has nanosecond
//! resolution and no timer slack, registered with the runtime like a socket.

use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use rustix::fd::OwnedFd;
use rustix::time::{
    Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec, timerfd_create,
    timerfd_settime,
};
use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;
use tokio::time::Instant;

/// How sends are spread over time (`porch loadtest --arrivals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Arrivals {
    /// Each send released at its own intended time by one precise timer (the default).
    Smooth,
    /// Each connection sleeps on tokio's millisecond timer: sends due in the same millisecond
    /// leave together (the generator before 2026-12-01).
    Ticks,
}

impl Arrivals {
    /// The name the report records.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Smooth => "smooth",
            Self::Ticks => "ticks",
        }
    }
}

/// One connection's share of the paced sends: how many have been released to it so far.
#[derive(Default)]
pub struct Slot {
    released: Cell<u64>,
    notify: Notify,
}

impl Slot {
    /// Waits until send number `k` (from 0) of this connection has been released.
    pub async fn released(&self, k: u64) {
        // The count, not the permit, decides: a permit taken by a dropped wait is not lost work.
        while self.released.get() <= k {
            self.notify.notified().await;
        }
    }

    fn release(&self) {
        self.released.set(self.released.get() + 1);
        self.notify.notify_one();
    }
}

/// Releases the sends of `slots.len()` connections sharing `rate` messages a second, round
/// robin, send `g` at `t0 + g / rate`, until `end`. This is the same schedule as
/// [`super::generator`]'s per-connection one: connection `i` sends its `k`-th message at
/// `t0 + (k·n + i) / rate`.
pub async fn pace(slots: Vec<Rc<Slot>>, rate: u32, t0: Instant, end: Instant) -> io::Result<()> {
    if slots.is_empty() || rate == 0 {
        return Ok(());
    }
    let timer = PreciseTimer::new()?;
    let n = slots.len() as u64;
    let at = |g: u64| {
        let nanos = u128::from(g) * 1_000_000_000 / u128::from(rate);
        t0 + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    };
    let mut g = 0;
    while at(g) < end {
        timer.sleep_until(at(g)).await?;
        // Release everything due: one send per wake-up when the generator keeps up, a catch-up
        // burst when it did not (the report's send lag shows which).
        let now = Instant::now();
        while at(g) <= now && at(g) < end {
            let i = usize::try_from(g % n).unwrap_or(0);
            slots[i].release();
            g += 1;
        }
    }
    Ok(())
}

/// A monotonic `timerfd` the runtime polls like a socket.
struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
}

impl PreciseTimer {
    fn new() -> io::Result<Self> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        // Tokio 1.54 deprecates the safe constructor because an arbitrary `AsRawFd` may close or
        // swap its descriptor behind the reactor's back; an `OwnedFd` we hold cannot, which is
        // the case the (unsafe, and so forbidden here) `register` exists for.
        #[allow(deprecated)]
        let fd = AsyncFd::new(fd)?;
        Ok(Self { fd })
    }

    async fn sleep_until(&self, at: Instant) -> io::Result<()> {
        loop {
            let left = at.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            let zero = Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let value = Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            timerfd_settime(
                self.fd.get_ref(),
                TimerfdTimerFlags::empty(),
                &Itimerspec {
                    it_interval: zero,
                    it_value: value,
                },
            )?;
            let mut ready = self.fd.readable().await?;
            // Reading the expiry count disarms readiness; a spurious wake-up finds nothing to read
            // and the loop arms the timer again.
            let mut expirations = [0u8; 8];
            let _ = ready.try_io(|fd| Ok(rustix::io::read(fd.get_ref(), &mut expirations)?));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timer waits until its instant and no less, also for waits far below a millisecond.
    /// (How precisely it wakes is the load test's business: its report gives the send lag.)
    #[tokio::test(flavor = "current_thread")]
    async fn the_timer_waits_until_its_instant() {
        let timer = PreciseTimer::new().unwrap();
        let start = Instant::now();
        let mut at = start;
        for _ in 0..100 {
            at += Duration::from_micros(100);
            timer.sleep_until(at).await.unwrap();
            assert!(Instant::now() >= at, "woke before its time");
        }
        assert!(start.elapsed() >= Duration::from_millis(10));
    }

    /// Every connection gets its share, in round-robin order, and nothing after `end`.
    #[tokio::test(flavor = "current_thread")]
    async fn sends_are_released_round_robin_until_the_end() {
        let slots: Vec<Rc<Slot>> = (0..3).map(|_| Rc::new(Slot::default())).collect();
        let t0 = Instant::now();
        // 10,000 a second for 10 ms: sends 0..100, 34 + 33 + 33.
        pace(slots.clone(), 10_000, t0, t0 + Duration::from_millis(10))
            .await
            .unwrap();
        let counts: Vec<u64> = slots.iter().map(|s| s.released.get()).collect();
        assert_eq!(counts, vec![34, 33, 33]);
        slots[2].released(32).await;
    }
}
