//! Progress on a terminal (indicatif), and the waiting message a build prints for another one.

use std::io::Write;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use knowledge::build::Reporter;

/// Progress bars on stderr, for a terminal only.
#[derive(Default)]
pub(crate) struct Bars {
    pub(crate) current: Mutex<Option<ProgressBar>>,
}

/// No progress, but a build that waits for another one says so.
pub(crate) struct Quiet;

impl Reporter for Quiet {
    fn waiting(&self, holder: Option<u32>) {
        say_waiting(holder);
    }
}

pub(crate) fn say_waiting(holder: Option<u32>) {
    let holder = holder.map_or_else(String::new, |pid| format!(" (pid {pid})"));
    let _ = writeln!(std::io::stderr(), "waiting for another build to finish{holder}");
}

impl Reporter for Bars {
    fn stage(&self, name: &'static str, total: u64) {
        let bar = if total == 0 {
            ProgressBar::new_spinner()
        } else {
            ProgressBar::new(total).with_style(
                // Rate and estimate: embedding with a local model can take minutes.
                ProgressStyle::with_template("{msg:>10} [{bar:30}] {pos}/{len} {rate} {elapsed}, about {eta} left")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .with_key("rate", |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                        let _ = write!(out, "{:.1}/s", state.per_sec());
                    })
                    .progress_chars("=> "),
            )
        };
        bar.set_message(name);
        *self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(bar);
    }

    fn advance(&self, by: u64) {
        if let Some(bar) = &*self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            bar.inc(by);
        }
    }

    fn finish_stage(&self) {
        if let Some(bar) = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            bar.finish_and_clear();
        }
    }

    fn waiting(&self, holder: Option<u32>) {
        say_waiting(holder);
    }
}
