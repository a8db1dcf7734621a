use std::time::Duration;

#[tokio::main(worker_threads = 2)]
async fn main() {
    let mut set = tokio::task::JoinSet::new();
    for i in 1..=4u64 {
        set.spawn(async move {
            tokio::time::sleep(Duration::from_millis(10 * i)).await;
            i * i
        });
    }
    let mut sum = 0;
    while let Some(r) = set.join_next().await {
        sum += r.unwrap();
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    tokio::spawn(async move {
        for k in 0..10u64 {
            tx.send(k).await.unwrap();
        }
    });
    let mut got = 0;
    while let Some(k) = rx.recv().await {
        got += k;
    }
    let timed = tokio::time::timeout(Duration::from_millis(5), std::future::pending::<()>()).await;
    println!("sum {sum} got {got} timed out {}", timed.is_err());
}
