//! Tasks: `spawn`, `JoinHandle`, `yield_now`, and the combinators `join`
//! and `select`.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::world::{NodeId, TaskId, with};

/// Why a task's result is not available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinError {
    /// The task was dropped before it finished: its node crashed, it was
    /// aborted, or the simulation ended.
    Cancelled,
}

impl std::fmt::Display for JoinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the task was cancelled (its node crashed, or it was aborted)")
    }
}

impl std::error::Error for JoinError {}

struct Shared<T> {
    result: Option<Result<T, JoinError>>,
    waker: Option<Waker>,
}

/// Marks the task's result as cancelled if the task is dropped unfinished.
struct Completion<T>(Rc<RefCell<Shared<T>>>);

impl<T> Drop for Completion<T> {
    fn drop(&mut self) {
        let mut shared = self.0.borrow_mut();
        if shared.result.is_none() {
            shared.result = Some(Err(JoinError::Cancelled));
            if let Some(waker) = shared.waker.take() {
                waker.wake();
            }
        }
    }
}

/// An owned permission to await a spawned task's result. Dropping it
/// detaches the task (it keeps running).
pub struct JoinHandle<T> {
    shared: Rc<RefCell<Shared<T>>>,
    id: TaskId,
}

impl<T> JoinHandle<T> {
    /// Drops the task now (a no-op if it has finished).
    pub fn abort(&self) {
        if let Some(future) = with(|w| w.remove(self.id)) {
            drop(future);
        }
    }

    /// Whether the task has finished or was cancelled.
    pub fn is_finished(&self) -> bool {
        self.shared.borrow().result.is_some()
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut shared = self.shared.borrow_mut();
        match shared.result.take() {
            Some(result) => Poll::Ready(result),
            None => {
                shared.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

pub(crate) fn spawn_on<F>(node: NodeId, future: F, main: bool) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let shared = Rc::new(RefCell::new(Shared {
        result: None,
        waker: None,
    }));
    let completion = Completion(shared.clone());
    let task = async move {
        let completion = completion;
        let value = future.await;
        let mut shared = completion.0.borrow_mut();
        shared.result = Some(Ok(value));
        if let Some(waker) = shared.waker.take() {
            waker.wake();
        }
    };
    let id = with(|w| w.spawn(node, Box::pin(task), main));
    JoinHandle { shared, id }
}

/// Runs `future` as a new task on the current node. Which ready task is
/// polled next is a decision; the task dies with its node.
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let node = with(|w| w.current_node());
    spawn_on(node, future, false)
}

/// Lets the other ready tasks run before this one continues.
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(move |cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

/// One of two values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Waits for whichever of `a` and `b` finishes first (`a` if both are
/// ready at one poll) and drops the other.
pub async fn select<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(v));
        }
        if let Poll::Ready(v) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(v));
        }
        Poll::Pending
    })
    .await
}

/// Waits for both `a` and `b`.
pub async fn join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    let (mut ra, mut rb) = (None, None);
    std::future::poll_fn(|cx| {
        if ra.is_none()
            && let Poll::Ready(v) = a.as_mut().poll(cx)
        {
            ra = Some(v);
        }
        if rb.is_none()
            && let Poll::Ready(v) = b.as_mut().poll(cx)
        {
            rb = Some(v);
        }
        if ra.is_some() && rb.is_some() {
            Poll::Ready((ra.take().expect("set"), rb.take().expect("set")))
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Waits for every future of `futures`, returning their outputs in order.
pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(v) => *output = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(
                outputs
                    .iter_mut()
                    .map(|o| o.take().expect("ready"))
                    .collect(),
            )
        }
    })
    .await
}
