//! The coordinator's accepted connections, on both of its ports (gRPC and HTTP), counted and
//! timed out, so that peers without a token cannot exhaust its file descriptors:
//!
//! * at most [`ConnectionLimit::max`] connections are open at once, across both ports (a
//!   share of the process's file limit, the rest kept for the job's own files); at the limit,
//!   the oldest connection that never said anything is closed to make room, else accepting
//!   waits;
//! * a connection must send its first [`FIRST_BYTES`] bytes (an HTTP/2 preface, a TLS
//!   hello, an HTTP request line) within [`FIRST_BYTES_TIMEOUT`], and is closed after
//!   [`IDLE_TIMEOUT`] with no byte either way (a live gRPC peer answers the server's pings
//!   well within it);
//! * running out of descriptors on `accept` (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`) is
//!   back-pressure: logged, a short pause, and accepting goes on; never an error of the job.
//!
//! [`raise_file_limit`] raises the soft limit of open files to the hard one at start.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

/// Bytes a connection must send before it counts as speaking (and no longer as a silent
/// connection that may be closed to make room).
pub const FIRST_BYTES: u64 = 16;
/// How long a new connection has to send its first bytes.
pub const FIRST_BYTES_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection may go without a byte read or written.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// File descriptors kept for the job's own files (the arrays, the tables, the proof), at
/// least; the connections get the rest of the limit, up to [`MOST_CONNECTIONS`].
const RESERVED_FILES: u64 = 128;
/// Most connections at once whatever the file limit.
const MOST_CONNECTIONS: u64 = 1 << 16;

/// Raises the soft limit of open files to the hard limit (Unix); the soft limit now.
#[allow(
    clippy::useless_conversion,
    reason = "rlim_t is u64 on Linux, another type elsewhere"
)]
pub fn raise_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit read and write the struct given, nothing else.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) != 0 {
                return None;
            }
            if limit.rlim_cur < limit.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: limit.rlim_max,
                    rlim_max: limit.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raw const raised) == 0 {
                    limit.rlim_cur = limit.rlim_max;
                }
            }
        }
        Some(u64::from(limit.rlim_cur))
    }
    #[cfg(not(unix))]
    None
}

/// The soft limit of open files, if known.
#[allow(
    clippy::useless_conversion,
    reason = "rlim_t is u64 on Linux, another type elsewhere"
)]
fn file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct given, nothing else.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } != 0 {
            return None;
        }
        Some(u64::from(limit.rlim_cur))
    }
    #[cfg(not(unix))]
    None
}

/// What a connection shares with the limit: whether it spoke, and how to close it.
struct Shared {
    spoke: AtomicBool,
    evicted: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Shared {
    fn evict(&self) {
        self.evicted.store(true, Ordering::Release);
        if let Some(w) = self
            .waker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            w.wake();
        }
    }
}

/// The connections of a process (both ports share one): a count and the silent ones.
#[derive(Clone)]
pub struct ConnectionLimit {
    permits: Arc<Semaphore>,
    max: usize,
    silent: Arc<Mutex<VecDeque<Weak<Shared>>>>,
    closed_silent: Arc<AtomicU64>,
}

impl std::fmt::Debug for ConnectionLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionLimit")
            .field("max", &self.max)
            .field("open", &self.open())
            .finish_non_exhaustive()
    }
}

impl ConnectionLimit {
    /// At most `max` connections at once (at least one).
    pub fn new(max: usize) -> ConnectionLimit {
        let max = max.max(1);
        ConnectionLimit {
            permits: Arc::new(Semaphore::new(max)),
            max,
            silent: Arc::default(),
            closed_silent: Arc::default(),
        }
    }

    /// The limit of this process: its file limit less what the job keeps for its files
    /// (three quarters of the limit at most), at least 16.
    pub fn for_this_process() -> ConnectionLimit {
        let files = file_limit().unwrap_or(1024);
        let max = files
            .saturating_sub(RESERVED_FILES.max(files / 4))
            .clamp(16, MOST_CONNECTIONS);
        ConnectionLimit::new(usize::try_from(max).unwrap_or(usize::MAX))
    }

    /// Most connections at once.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.max - self.permits.available_permits()
    }

    /// Connections closed because they said nothing (in time, or while others waited).
    pub fn closed_silent(&self) -> u64 {
        self.closed_silent.load(Ordering::Relaxed)
    }

    /// Closes the oldest connection that has not spoken yet; whether there was one.
    fn evict_silent(&self) -> bool {
        let mut silent = self
            .silent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while let Some(weak) = silent.pop_front() {
            if let Some(shared) = weak.upgrade()
                && !shared.spoke.load(Ordering::Acquire)
                && !shared.evicted.load(Ordering::Acquire)
            {
                shared.evict();
                self.closed_silent.fetch_add(1, Ordering::Relaxed);
                return true;
            }
        }
        false
    }

    /// A slot for one more connection: at once if free, else after closing the oldest
    /// silent connection, else when one closes.
    async fn slot(&self) -> OwnedSemaphorePermit {
        loop {
            if let Ok(p) = self.permits.clone().try_acquire_owned() {
                return p;
            }
            if self.evict_silent() {
                // Its task closes it soon: wait for its slot, a moment at most.
                if let Ok(Ok(p)) = tokio::time::timeout(
                    Duration::from_millis(100),
                    self.permits.clone().acquire_owned(),
                )
                .await
                {
                    return p;
                }
                continue;
            }
            if let Ok(p) = self.permits.clone().acquire_owned().await {
                return p;
            }
        }
    }

    fn track(&self, permit: OwnedSemaphorePermit, stream: TcpStream) -> Connection {
        let shared = Arc::new(Shared {
            spoke: AtomicBool::new(false),
            evicted: AtomicBool::new(false),
            waker: Mutex::new(None),
        });
        {
            let mut silent = self
                .silent
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Forget the entries of connections gone or spoken, now and then.
            if silent.len() >= self.max {
                silent.retain(|w| {
                    w.upgrade()
                        .is_some_and(|s| !s.spoke.load(Ordering::Relaxed))
                });
            }
            silent.push_back(Arc::downgrade(&shared));
        }
        Connection {
            stream,
            _permit: permit,
            shared,
            read: 0,
            deadline: Box::pin(tokio::time::sleep(FIRST_BYTES_TIMEOUT)),
            closed_silent: self.closed_silent.clone(),
        }
    }

    /// Accepts the next connection on `listener` within the limit (waiting for a slot
    /// first); errors of `accept` are logged and waited out, never returned.
    pub async fn accept(&self, listener: &TcpListener) -> (Connection, SocketAddr) {
        let mut warned: Option<Instant> = None;
        loop {
            let permit = self.slot().await;
            match listener.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    return (self.track(permit, stream), peer);
                }
                Err(e) => {
                    drop(permit);
                    let pause = accept_error_pause(&e);
                    if !pause.is_zero() {
                        if warned.is_none_or(|w| w.elapsed() > Duration::from_secs(10)) {
                            warned = Some(Instant::now());
                            tracing::warn!(
                                open = self.open(),
                                "cannot accept a connection ({e}); pausing, then accepting again"
                            );
                        }
                        tokio::time::sleep(pause).await;
                    }
                }
            }
        }
    }

    /// The connections of `listener`, one at a time, as a stream (for tonic).
    pub fn incoming(
        self,
        listener: TcpListener,
    ) -> impl tokio_stream::Stream<Item = io::Result<Connection>> + Send + 'static {
        let listener = Arc::new(listener);
        futures_unfold(move || {
            let limit = self.clone();
            let listener = listener.clone();
            async move { Ok(limit.accept(&listener).await.0) }
        })
    }
}

/// An endless stream of the outputs of `next()`.
fn futures_unfold<F, Fut, T>(next: F) -> impl tokio_stream::Stream<Item = T> + Send + 'static
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tokio::spawn(async move {
        loop {
            tokio::select! {
                item = next() => {
                    if tx.send(item).await.is_err() {
                        break;
                    }
                }
                () = tx.closed() => break,
            }
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

/// How long to pause after `accept` failed with `e` (zero: go on at once, the error was
/// the peer's).
fn accept_error_pause(e: &io::Error) -> Duration {
    match e.kind() {
        io::ErrorKind::ConnectionAborted
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::Interrupted
        | io::ErrorKind::WouldBlock
        | io::ErrorKind::TimedOut => Duration::ZERO,
        // Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) and anything else:
        // wait for connections to close.
        _ => Duration::from_millis(100),
    }
}

/// An accepted connection: counted until dropped, closed when silent or idle too long.
pub struct Connection {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
    shared: Arc<Shared>,
    /// Bytes read so far (up to [`FIRST_BYTES`]).
    read: u64,
    deadline: Pin<Box<Sleep>>,
    closed_silent: Arc<AtomicU64>,
}

impl Connection {
    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.stream.peer_addr()
    }

    fn progressed(&mut self) {
        self.deadline
            .as_mut()
            .reset(tokio::time::Instant::now() + IDLE_TIMEOUT);
    }

    /// Fails the call if the connection was closed to make room or its deadline passed
    /// (after the inner call returned `Pending`, so that the deadline's timer is armed).
    fn check_deadline(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if self.shared.evicted.load(Ordering::Acquire) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "closed: it said nothing while others waited",
            ));
        }
        *self
            .shared
            .waker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(cx.waker().clone());
        if self.deadline.as_mut().poll(cx).is_ready() {
            if self.read < FIRST_BYTES {
                self.closed_silent.fetch_add(1, Ordering::Relaxed);
            }
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "closed: silent for too long",
            ));
        }
        Ok(())
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.shared.evicted.load(Ordering::Acquire) {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "closed: it said nothing while others waited",
            )));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let n = (buf.filled().len() - before) as u64;
                if n > 0 {
                    let was = this.read;
                    this.read = (this.read + n).min(FIRST_BYTES);
                    if this.read >= FIRST_BYTES {
                        if was < FIRST_BYTES {
                            this.shared.spoke.store(true, Ordering::Release);
                        }
                        this.progressed();
                    }
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match this.check_deadline(cx) {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            },
        }
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.stream).poll_write(cx, buf) {
            Poll::Ready(Ok(n)) => {
                if n > 0 && this.read >= FIRST_BYTES {
                    this.progressed();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match this.check_deadline(cx) {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            },
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.stream).poll_write_vectored(cx, bufs) {
            Poll::Ready(Ok(n)) => {
                if n > 0 && this.read >= FIRST_BYTES {
                    this.progressed();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match this.check_deadline(cx) {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            },
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for Connection {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        <TcpStream as tonic::transport::server::Connected>::connect_info(&self.stream)
    }
}
