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
