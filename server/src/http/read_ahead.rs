//! Reads from a connection's socket in chunks of up to [`CHUNK`], handed on in whatever smaller
//! pieces the reader asks for. What a chunk brings beyond the request waits in a buffer that
//! exists only while it holds bytes. A widget websocket's reader (tungstenite) keeps its read
//! buffer for the socket's whole life; with this beneath it, that buffer can be small, so an idle
//! widget holds no 4 KiB buffer, while a busy one still takes up to 4 KiB per read syscall
//! (issue #19 item 7). Writes pass straight through.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes taken from the socket by one read: what the widget's read buffer was before.
pub const CHUNK: usize = 4 * 1024;

/// A socket read ahead in chunks (see the module docs).
pub struct ReadAhead<S> {
    inner: S,
    /// Read from the socket, not yet taken by the reader; empty and unallocated when idle.
    pending: Vec<u8>,
    /// How much of `pending` the reader has taken.
    taken: usize,
}

impl<S> ReadAhead<S> {
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            pending: Vec::new(),
            taken: 0,
        }
    }

    /// Hands on what is pending, then frees the buffer once it is all taken.
    fn take_pending(&mut self, buf: &mut ReadBuf<'_>) {
        let end = self.pending.len().min(self.taken + buf.remaining());
        buf.put_slice(&self.pending[self.taken..end]);
        self.taken = end;
        if self.taken == self.pending.len() {
            self.pending = Vec::new();
            self.taken = 0;
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ReadAhead<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !this.pending.is_empty() {
            this.take_pending(buf);
            return Poll::Ready(Ok(()));
        }
        if buf.remaining() >= CHUNK || buf.remaining() == 0 {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        // On the stack: kept only when the reader asked for less than arrived.
        let mut chunk = [MaybeUninit::<u8>::uninit(); CHUNK];
        let mut chunk = ReadBuf::uninit(&mut chunk);
        ready!(Pin::new(&mut this.inner).poll_read(cx, &mut chunk))?;
        let read = chunk.filled();
        let handed = read.len().min(buf.remaining());
        buf.put_slice(&read[..handed]);
        if handed < read.len() {
            this.pending = read[handed..].to_vec();
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ReadAhead<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    fn bytes(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| u8::try_from(i % 251).expect("below 256"))
            .collect()
    }

    #[tokio::test]
    async fn a_small_reader_gets_every_byte_in_order_and_the_buffer_is_freed_once_taken() {
        let (mut peer, socket) = tokio::io::duplex(2 * CHUNK);
        let mut socket = ReadAhead::new(socket);
        let sent = bytes(3000);
        peer.write_all(&sent).await.expect("written");
        let mut received = Vec::new();
        let mut piece = [0u8; 512];
        let n = socket.read(&mut piece).await.expect("read");
        received.extend_from_slice(&piece[..n]);
        assert_eq!(n, 512);
        assert_eq!(
            socket.pending.len(),
            3000 - 512,
            "one read took everything waiting"
        );
        while received.len() < sent.len() {
            let n = socket.read(&mut piece).await.expect("read");
            received.extend_from_slice(&piece[..n]);
        }
        assert_eq!(received, sent);
        assert_eq!(
            socket.pending.capacity(),
            0,
            "an idle connection holds no buffer"
        );
    }

    #[tokio::test]
    async fn a_reader_with_a_chunk_of_room_reads_the_socket_directly() {
        let (mut peer, socket) = tokio::io::duplex(2 * CHUNK);
        let mut socket = ReadAhead::new(socket);
        peer.write_all(&bytes(100)).await.expect("written");
        let mut room = vec![0u8; CHUNK];
        assert_eq!(socket.read(&mut room).await.expect("read"), 100);
        assert_eq!(socket.pending.capacity(), 0);
    }

    #[tokio::test]
    async fn the_end_of_the_stream_reaches_the_reader() {
        let (mut peer, socket) = tokio::io::duplex(CHUNK);
        let mut socket = ReadAhead::new(socket);
        peer.write_all(b"bye").await.expect("written");
        drop(peer);
        let mut all = Vec::new();
        socket.read_to_end(&mut all).await.expect("read");
        assert_eq!(all, b"bye");
    }
}
