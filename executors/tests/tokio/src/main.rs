use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
    // A TCP echo over the loopback: listener, accept, connect, bytes.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 5];
        stream.read_exact(&mut buf).await.unwrap();
        stream.write_all(&buf.to_ascii_uppercase()).await.unwrap();
    });
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    client.write_all(b"hello").await.unwrap();
    let mut back = [0u8; 5];
    client.read_exact(&mut back).await.unwrap();
    server.await.unwrap();
    println!(
        "sum {sum} got {got} timed out {} echo {}",
        timed.is_err(),
        String::from_utf8_lossy(&back)
    );
}
