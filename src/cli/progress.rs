//! A progress bar on stderr for long searches, only when stderr is a
//! terminal, and only once a search has run for a second (short runs never
//! flash one).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

const STEPS: u64 = 10_000;

pub struct Bar {
    bar: Option<ProgressBar>,
    enabled: bool,
    started: Instant,
    last: Instant,
}

impl Bar {
    pub fn new(disabled: bool) -> Bar {
        Bar {
            bar: None,
            enabled: !disabled && std::io::stderr().is_terminal(),
            started: Instant::now(),
            last: Instant::now(),
        }
    }

    /// Shows solutions, nodes per second, the fraction of the tree done
    /// (Knuth's estimate) and the time left that it implies.
    pub fn update(&mut self, solutions: u64, nodes: u64, fraction: f64) {
        if !self.enabled || self.last.elapsed() < Duration::from_millis(100) {
            return;
        }
        let elapsed = self.started.elapsed();
        if elapsed < Duration::from_secs(1) {
            return;
        }
        self.last = Instant::now();
        let bar = self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::new(STEPS);
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {percent:>3}% {msg}")
                    .expect("a valid template"),
            );
            bar
        });
        let fraction = fraction.clamp(0.0, 1.0);
        bar.set_position((fraction * STEPS as f64) as u64);
        let rate = nodes as f64 / elapsed.as_secs_f64();
        let eta = if fraction > 0.0 {
            format!(
                "{:.0} s",
                elapsed.as_secs_f64() * (1.0 - fraction) / fraction
            )
        } else {
            "?".into()
        };
        bar.set_message(format!(
            "{solutions} solutions, {:.1} M nodes/s, ETA {eta}",
            rate / 1e6
        ));
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
