//! This process as the kernel sees it: CPU time, resident memory and open file descriptors,
//! read from `/proc/self` (Linux). Elsewhere every figure is `None`.

use std::time::Duration;

/// Clock ticks per second of `/proc/self/stat` (`sysconf(_SC_CLK_TCK)`; 100 on every Linux
/// architecture Porch builds for, and reading it needs libc).
const TICKS_PER_SECOND: u64 = 100;

/// One reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessReading {
    /// User plus system CPU time since the process started.
    pub cpu: Option<Duration>,
    pub rss_bytes: Option<u64>,
    pub open_fds: Option<u64>,
}

/// Reads the figures now.
pub fn read() -> ProcessReading {
    ProcessReading {
        cpu: std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| cpu_time(&s)),
        // `VmRSS` is in kB whatever the page size (16 KiB on a Raspberry Pi 5, 64 KiB on some
        // arm64 distributions), unlike the page counts of `statm`.
        rss_bytes: std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| vm_rss_bytes(&s)),
        open_fds: std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|dir| dir.count() as u64),
    }
}

/// The `VmRSS:` line of `/proc/<pid>/status`, in bytes.
fn vm_rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// utime + stime from the text of `/proc/<pid>/stat`. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted after its last `)`.
fn cpu_time(stat: &str) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // After the name: state is field 3; utime and stime are fields 14 and 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = utime + stime;
    Some(Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND))
}

#[cfg(test)]
mod tests {
    #[test]
    fn rss_is_read_in_kilobytes_from_status() {
        let status = "Name:\tporch\nVmPeak:\t  99999 kB\nVmRSS:\t   28672 kB\nThreads:\t4\n";
        assert_eq!(super::vm_rss_bytes(status), Some(28672 * 1024));
        assert_eq!(super::vm_rss_bytes("Name:\tporch\n"), None);
    }

    use super::*;

    #[test]
    fn cpu_time_is_counted_after_a_name_with_spaces() {
        let stat = "4242 (porch (x) y) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 9 0";
        assert_eq!(cpu_time(stat), Some(Duration::from_secs(3)));
    }

    #[test]
    fn this_process_can_be_read_on_linux() {
        if cfg!(target_os = "linux") {
            let now = read();
            assert!(now.cpu.is_some());
            assert!(now.rss_bytes.is_some_and(|b| b > 0));
            assert!(now.open_fds.is_some_and(|n| n > 0));
        }
    }
}
