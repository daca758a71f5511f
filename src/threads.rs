//! Threads: how many cores the process has, and how many a piece of work may use while
//! several projects are built side by side (each project worker holds one core).

/// The number of cores, asked once per process (std reads the cgroup quota files each time).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// How many threads are building a project each (`mdlc build` with several
/// projects): each holds a core, so the SMD loader (`crate::load`) parses on the cores left over only,
/// instead of oversubscribing them; the last project running gets every core again.
static PROJECT_WORKERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Held by a thread while it builds projects alongside others (see [`PROJECT_WORKERS`]).
pub struct ProjectWorker(());

impl ProjectWorker {
    pub fn enter() -> ProjectWorker {
        PROJECT_WORKERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ProjectWorker(())
    }
}

impl Drop for ProjectWorker {
    fn drop(&mut self) {
        PROJECT_WORKERS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Threads for `jobs` independent pieces of one project's work (parsing files, encoding
/// sequences): one plus the cores no project worker holds, at most one per piece.
pub fn spare_threads(jobs: usize) -> usize {
    let workers = PROJECT_WORKERS.load(std::sync::atomic::Ordering::Relaxed);
    (1 + cores().saturating_sub(workers.max(1))).min(jobs)
}

/// `f` applied to every item on up to `threads` threads (this one among them), each taking the
/// next item when it has finished one; the results in the items' order, whatever the threads.
/// Give the largest items first: the last to start then finish closest together.
pub fn map_parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            out.push((i, f(item)));
        }
        out
    };
    let mut done = std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut done = work();
        for t in others {
            done.extend(t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        done
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn map_parallel_keeps_the_order() {
        let items: Vec<u64> = (0..1000).collect();
        for threads in [1, 2, 3, 8] {
            let out = super::map_parallel(&items, threads, |&x| {
                // uneven work, so that threads finish out of order
                (0..x % 7 * 1000).fold(x, |a, b| a.wrapping_add(b)) % 1_000_003
            });
            let want: Vec<u64> = items
                .iter()
                .map(|&x| (0..x % 7 * 1000).fold(x, |a, b| a.wrapping_add(b)) % 1_000_003)
                .collect();
            assert_eq!(out, want, "{threads} threads");
        }
    }
}
