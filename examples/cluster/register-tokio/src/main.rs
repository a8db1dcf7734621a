//! A register served over TCP, kept in a file, on tokio: "SET v\n" stores
//! v and answers "OK\n", "GET\n" answers "v\n" (the protocol of
//! `../register-server.c`). Usage: `register-tokio PORT [fixed]`.
//!
//! The bug: a SET is acknowledged before its value is durable (written to
//! value.tmp, synced, renamed over value, the folder synced: but after the
//! "OK" left). With `fixed`, the value is durable first.

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

async fn store(value: &str) -> std::io::Result<()> {
    let mut file = tokio::fs::File::create("value.tmp").await?;
    file.write_all(value.as_bytes()).await?;
    file.sync_all().await?;
    drop(file);
    tokio::fs::rename("value.tmp", "value").await?;
    tokio::task::spawn_blocking(|| std::fs::File::open(".")?.sync_all()).await??;
    Ok(())
}

#[tokio::main(worker_threads = 2)]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let port = args.get(1).map_or("7000", String::as_str);
    let fixed = args.get(2).is_some_and(|a| a == "fixed");
    let value = tokio::fs::read_to_string("value").await.unwrap_or_else(|_| "0".into());
    let value = std::sync::Arc::new(tokio::sync::Mutex::new(value));
    let listener = TcpListener::bind(format!("0.0.0.0:{port}")).await?;
    loop {
        let (socket, _) = listener.accept().await?;
        let value = value.clone();
        tokio::spawn(async move {
            let (read, mut write) = socket.into_split();
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut held = value.lock().await;
                if let Some(v) = line.strip_prefix("SET ") {
                    if fixed && store(v).await.is_err() {
                        return;
                    }
                    *held = v.to_string();
                    if write.write_all(b"OK\n").await.is_err() {
                        return;
                    }
                    if !fixed && store(v).await.is_err() {
                        return;
                    }
                } else if line == "GET" {
                    let answer = format!("{held}\n");
                    if write.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            }
        });
    }
}
