//! `queen reseal`: the last step of a payload key rotation (README,
//! "Rotating the key").

use queen::config::Config;

/// Seals every payload under a retired key again under the current one,
/// printing progress, and says whether the retired keys can go.
pub(crate) async fn run(config: &Config) -> anyhow::Result<()> {
    anyhow::ensure!(
        config.encryption_key_file.is_some(),
        "queen reseal needs --encryption-key-file (the new key) and \
         --encryption-retired-key-files (the keys to retire)"
    );
    let engine = queen::open_engine(config).await?;
    let mut shown = 0;
    let result = engine
        .reseal(|r| {
            // A line per 100,000 rows examined, not per step.
            if r.examined / 100_000 > shown {
                shown = r.examined / 100_000;
                eprintln!(
                    "examined {} rows, resealed {}",
                    r.examined,
                    r.segments + r.dead_letters
                );
            }
        })
        .await;
    engine.close().await;
    let report = result?;
    println!(
        "examined {} rows: resealed {} segments and {} dead letters",
        report.examined, report.segments, report.dead_letters
    );
    anyhow::ensure!(
        report.changed_meanwhile == 0,
        "{} payloads were rewritten by a broker while being resealed; run queen reseal again",
        report.changed_meanwhile
    );
    println!(
        "no payload is sealed under a retired key any more: the retired key files can be dropped"
    );
    Ok(())
}
