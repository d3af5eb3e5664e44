//! The pump of a solution stream and the response streams every streaming
//! call is fed through.
//!
//! Streams are fed by a pump task per call: it forwards the job's solution
//! batches (through a channel of two messages, so a slow client holds back
//! the job's bounded buffer and through it the workers), sends progress at
//! the requested interval (a due progress event goes before the next
//! waiting batch), and ends the job when the client goes away or the
//! call's deadline passes. tonic's own timeout only covers the time until a
//! stream is returned, so the pump enforces the deadline for the whole call.
//!
//! This room owns how messages go out; it must not validate requests or
//! decide what a job runs (the RPCs do, in their own rooms), nor know a
//! stream's message type (its [`StreamEvents`] does).

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Response, Status};
use tracing::Instrument;

use crate::service::convert;
use crate::service::job::{EndReason, Event, Job, Solutions};
use crate::service::pool::Pool;
use crate::service::proto as pb;
use crate::service::status;

/// Cancels a job if the call that owns it is dropped before it ends.
pub(in crate::service) struct CancelOnDrop {
    pub(in crate::service) pool: Arc<Pool>,
    pub(in crate::service) job: Arc<Job>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.job.summary().is_none() {
            self.pool.cancel(&self.job, EndReason::Cancelled);
        }
    }
}

pub(in crate::service) type EventStream<T> =
    Pin<Box<dyn tokio_stream::Stream<Item = Result<T, Status>> + Send>>;

/// The messages of one kind of solution stream (Enumerate's,
/// EnumeratePuzzle's): how a batch, a progress event and the summary go out.
pub(in crate::service) trait StreamEvents: Send + 'static {
    type Message: Send + 'static;
    fn solutions(&self, batch: Solutions) -> Self::Message;
    fn progress(&self, progress: pb::Progress) -> Self::Message;
    fn summary(&self, summary: pb::Summary) -> Self::Message;
}

/// Feeds one solution stream from its job: it forwards the job's batches,
/// sends progress at the requested interval, and ends the job when the
/// client goes away or the call's deadline passes.
pub(in crate::service) struct Pump<E: StreamEvents> {
    pub(in crate::service) pool: Arc<Pool>,
    pub(in crate::service) job: Arc<Job>,
    pub(in crate::service) events: E,
    pub(in crate::service) interval: Duration,
    pub(in crate::service) deadline: Option<Instant>,
}

impl<E: StreamEvents> Pump<E> {
    /// Starts pumping in the background; the response streams what it
    /// sends. Two messages in flight at most, so a slow client holds back
    /// the job's bounded buffer, and through it the workers.
    pub(in crate::service) fn start(
        self,
        span: tracing::Span,
    ) -> Response<EventStream<E::Message>> {
        stream_from(span, move |tx| self.run(tx))
    }

    async fn run(self, tx: mpsc::Sender<Result<E::Message, Status>>) {
        let _cancel = CancelOnDrop {
            pool: self.pool.clone(),
            job: self.job.clone(),
        };
        let deadline = call_deadline(self.deadline);
        let mut ticker = tokio::time::interval_at(Instant::now() + self.interval, self.interval);
        // A reader slower than the interval gets one progress event after
        // each wait, not a burst of stale ones.
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let progress = || convert::progress(&self.pool.progress(&self.job));
        loop {
            // Progress that is due goes before the next batch: solutions
            // are nearly always waiting in the job's buffer (the workers
            // outrun any reader), and a progress event queued behind them
            // would never come. It is taken when it is sent, so it is the
            // latest, and the reader sees it after only what the channel
            // and the transport already hold.
            let message = tokio::select! {
                biased;
                () = tx.closed() => return,
                () = tokio::time::sleep_until(deadline) => {
                    self.pool.cancel(&self.job, EndReason::Deadline);
                    let _ = tx.send(Err(status::deadline("the call's deadline passed"))).await;
                    return;
                }
                _ = ticker.tick() => self.events.progress(progress()),
                event = self.job.next_event() => match event {
                    Event::Solutions(mut batch) => {
                        self.job.take_more_solutions(&mut batch);
                        self.events.solutions(batch)
                    }
                    // Only durable jobs take snapshots, and no call streams them.
                    Event::Snapshot(_) => continue,
                    Event::Done(summary) => {
                        // A stream that cannot end with its summary before
                        // the deadline ends with DEADLINE_EXCEEDED, never OK.
                        let summary_event = self.events.summary(convert::summary(&summary));
                        if !send_until(&tx, Ok(self.events.progress(progress())), deadline).await
                            || !send_until(&tx, Ok(summary_event), deadline).await
                        {
                            return deadline_passed(&tx, deadline).await;
                        }
                        // Cut short or failed: the status says so after the summary.
                        if let Some(status) = convert::end_status(&summary) {
                            let _ = send_until(&tx, Err(status), deadline).await;
                        }
                        return;
                    }
                },
            };
            if !send_until(&tx, Ok(message), deadline).await {
                if Instant::now() >= deadline {
                    self.pool.cancel(&self.job, EndReason::Deadline);
                    let _ = tx
                        .send(Err(status::deadline("the call's deadline passed")))
                        .await;
                }
                return;
            }
        }
    }
}

/// A response stream fed by `feed`, run in the background with two
/// messages in flight at most. If `feed` panics, the stream ends with
/// INTERNAL (not with a silent end that would look like success), and the
/// server goes on.
pub(in crate::service) fn stream_from<T, F, Fut>(
    span: tracing::Span,
    feed: F,
) -> Response<EventStream<T>>
where
    T: Send + 'static,
    F: FnOnce(mpsc::Sender<Result<T, Status>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(2);
    let last_word = tx.clone();
    let feeding = tokio::spawn(feed(tx).instrument(span.clone()));
    tokio::spawn(
        async move {
            if let Err(error) = feeding.await {
                if error.is_panic() {
                    tracing::error!("a stream's feeder panicked: the call ends with INTERNAL");
                    let _ = last_word
                        .send(Err(status::internal(
                            "the server failed while streaming this call; it has been logged",
                        )))
                        .await;
                }
            }
        }
        .instrument(span),
    );
    Response::new(Box::pin(ReceiverStream::new(rx)))
}

/// Sends unless the client is gone or the deadline passes first.
pub(super) async fn send_until<T>(tx: &mpsc::Sender<T>, message: T, deadline: Instant) -> bool {
    matches!(
        tokio::time::timeout_at(deadline, tx.send(message)).await,
        Ok(Ok(()))
    )
}

/// Ends a stream whose send failed: with DEADLINE_EXCEEDED if that is why.
pub(super) async fn deadline_passed<T>(tx: &mpsc::Sender<Result<T, Status>>, deadline: Instant) {
    if Instant::now() >= deadline {
        let _ = tx
            .send(Err(status::deadline("the call's deadline passed")))
            .await;
    }
}

/// The instant a call ends by: its deadline, or one that never comes.
pub(super) fn call_deadline(deadline: Option<Instant>) -> Instant {
    deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 86400))
}
