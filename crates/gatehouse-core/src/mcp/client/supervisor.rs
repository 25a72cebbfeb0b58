//! The one owner of the child process: notices its exit, runs the resource
//! watchdog, performs every kill and the teardown, and writes the final record.
//!
//! Everything else asks it through a [`Command`]; dropping the last
//! [`super::Connection`] handle is a kill too.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::closed::{Ceiling, Closed};
use super::lifecycle::ConnectionRun;
use super::options::ClientLimits;
use super::shared::{Command, Shared};
use crate::sandbox::{Grace, Sandboxed};
use crate::sync::lock;

/// The one owner of the child: waits for exit, watches resources, kills,
/// tears down, drains, records.
pub(super) async fn supervise(
    shared: Arc<Shared>,
    mut child: Sandboxed,
    mut commands: mpsc::UnboundedReceiver<Command>,
    mut alive: oneshot::Receiver<()>,
    stdout_task: tokio::task::JoinHandle<()>,
    stderr_task: tokio::task::JoinHandle<()>,
) -> ConnectionRun {
    let limits = shared.limits.clone();
    let watch = limits.max_rss_bytes.is_some() || limits.max_cpu.is_some();
    let mut tick = tokio::time::interval(limits.watchdog_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shutdown_ack = None;
    let (why, graceful) = loop {
        tokio::select! {
            exit = child.wait() => {
                let exit = exit.ok();
                lock(&shared.ends).exit = exit;
                // Let stderr reach end-of-file (bounded: a grandchild may hold
                // it) so the error carries the child's last words.
                let _ = tokio::time::timeout(Duration::from_millis(500), wait_finished(&stderr_task)).await;
                let excerpt = shared.stderr.excerpt().text;
                break (Closed::Exited { exit, excerpt }, false);
            }
            cmd = commands.recv() => match cmd {
                Some(Command::Kill(why)) => {
                    child.kill_group();
                    break (why, false);
                }
                Some(Command::Shutdown(ack)) => {
                    shutdown_ack = Some(ack);
                    // A child that already exited ended the connection itself.
                    // Its stderr may reach end-of-file just before the exit
                    // shows (the tail reports the end before its reader task
                    // returns), so then give the exit a moment to appear; a
                    // loaded machine can take a while to schedule the exit.
                    let exited = match child.try_exit() {
                        None if shared.stderr.ended() || stderr_task.is_finished() => {
                            tokio::time::timeout(Duration::from_secs(1), child.wait())
                                .await
                                .ok()
                                .and_then(|r| r.ok())
                        }
                        exited => exited,
                    };
                    if let Some(exit) = exited {
                        lock(&shared.ends).exit = Some(exit);
                        let excerpt = shared.stderr.excerpt().text;
                        break (Closed::Exited { exit: Some(exit), excerpt }, false);
                    }
                    break (Closed::Shutdown, true);
                }
                None => break (Closed::Dropped, false),
            },
            _ = &mut alive => {
                child.kill_group();
                break (Closed::Dropped, false);
            }
            _ = tick.tick() => {
                // Always: the sandbox records descendants and checks the scratch quota.
                if let Some(q) = child.watch() {
                    child.kill_group();
                    break (Closed::Resource {
                        ceiling: Ceiling::ScratchQuota,
                        limit: format!("{} MiB", q.limit / (1024 * 1024)),
                        observed: if q.used == u64::MAX {
                            format!(
                                "a tree it could not measure (deeper than {} levels, or unreadable)",
                                crate::sandbox::scratch::MAX_DEPTH
                            )
                        } else {
                            format!("{} MiB", q.used / (1024 * 1024))
                        },
                    }, false);
                }
                *lock(&shared.descendants) = child.descendants().to_vec();
                if let Some(why) = watch.then(|| check_ceilings(&child, &limits)).flatten() {
                    child.kill_group();
                    break (why, false);
                }
            }
        }
    };
    shared.rpc.close_all(why.clone());
    if graceful {
        // Closing stdin is the polite request to exit; a write stuck on a full
        // pipe must not hold teardown up, so wait for the lock only so long.
        shared.rpc.close_stdin(limits.grace.after_stdin_close).await;
    }
    let grace = if graceful {
        limits.grace
    } else {
        Grace {
            after_stdin_close: Duration::ZERO,
            after_term: Duration::from_millis(100),
        }
    };
    let report = child.teardown(grace).await;
    if let Some(exit) = report.exit {
        lock(&shared.ends).exit = Some(exit);
    }
    // The group is gone, so both pipes reach end-of-file.
    let _ = tokio::time::timeout(Duration::from_secs(5), stdout_task).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), stderr_task).await;
    if !report.group_gone {
        tracing::warn!(
            pgid = child.group.pgid,
            "process group members survived teardown"
        );
    }
    let record = shared.connection_record(Some(&why));
    if let Err(e) = shared.recorder.record_connection(&record).await {
        tracing::warn!(error = %e, "final connection record not written");
    }
    if let Some(ack) = shutdown_ack {
        let _ = ack.send(());
    }
    record
}

async fn wait_finished(task: &tokio::task::JoinHandle<()>) {
    while !task.is_finished() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn check_ceilings(child: &Sandboxed, limits: &ClientLimits) -> Option<Closed> {
    let usage = child.usage();
    if let Some(max) = limits.max_rss_bytes
        && usage.rss_bytes > max
    {
        return Some(Closed::Resource {
            ceiling: Ceiling::MaxRss,
            limit: format!("{} MiB", max / (1024 * 1024)),
            observed: format!("{} MiB", usage.rss_bytes / (1024 * 1024)),
        });
    }
    if let Some(max) = limits.max_cpu
        && usage.cpu_ms > max.as_millis() as u64
    {
        return Some(Closed::Resource {
            ceiling: Ceiling::MaxCpu,
            limit: format!("{} ms", max.as_millis()),
            observed: format!("{} ms", usage.cpu_ms),
        });
    }
    None
}
