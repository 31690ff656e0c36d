//! `queen mirror`, `queen mirror-status` and `queen mirror-fence`: the
//! migration off a running Kafka cluster (README, "Migrating from Kafka").

use queen::config::Config;
use queen::mirror::MirrorArgs;

/// Mirrors until SIGINT or SIGTERM.
pub(crate) async fn run(config: &Config, args: &MirrorArgs) -> anyhow::Result<()> {
    let engine = queen::open_engine(config).await?;
    eprintln!("queen mirror: copying from {}", args.source);
    let result = queen::mirror::run(engine.clone(), args.clone(), queen::shutdown_signal()).await;
    engine.close().await;
    result
}

/// Prints one line per mirrored partition (and per topic error).
pub(crate) async fn status(config: &Config) -> anyhow::Result<()> {
    let engine = queen::open_engine(config).await?;
    let status = engine.mirror_status().await;
    engine.close().await;
    println!("topic\tpartition\tsource_high_watermark\tmirrored_offset\tlag\tstate");
    for topic in status? {
        let state = if topic.fenced { "fenced" } else { "mirroring" };
        for p in &topic.partitions {
            println!(
                "{}\t{}\t{}\t{}\t{}\t{state}",
                topic.topic, p.partition, p.source_high_watermark, p.mirrored_offset, p.lag
            );
        }
        if let Some(error) = &topic.error {
            println!("{}\terror\t{error}", topic.topic);
        }
    }
    Ok(())
}

/// Fences each topic; fails (after trying all) if any could not be.
pub(crate) async fn fence(config: &Config, topics: &[String]) -> anyhow::Result<()> {
    let engine = queen::open_engine(config).await?;
    let mut refused = 0;
    for topic in topics {
        match engine.fence_mirror(topic).await {
            Ok(()) => println!("{topic}: fenced; local producers may write to it"),
            Err(e) => {
                refused += 1;
                eprintln!("{topic}: not fenced: {e}");
            }
        }
    }
    engine.close().await;
    anyhow::ensure!(refused == 0, "{refused} topic(s) not fenced");
    Ok(())
}
