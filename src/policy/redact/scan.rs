//! The scanner: finds each rule's secrets in a text that may arrive in
//! pieces, reporting a secret only once no later text can change it.
//!
//! Semantics, the same for a whole text and any split of it:
//! - a keyword hit at `k` opens a window `[k - L, k + L]` for each rule
//!   listing the keyword, where `L` is the rule's longest match (plus
//!   `KEYWORD_CONTEXT` for imported gitleaks rules); overlapping
//!   windows of one rule merge into an interval. A rule without keywords
//!   whose class prefix the prefilter covers (see `prefix`) gets the same
//!   window around each position where that prefix begins: every match
//!   begins with it, so the windows hold every match. Any other rule
//!   without keywords has one interval, the whole text;
//! - in each interval the rule's regex runs leftmost-first, match after
//!   match, with the text around the interval visible to `\b`, `^` and `$`;
//! - a match counts when it contains one of the rule's keywords (an
//!   imported rule's: when it lies in such a window) and its secret passes
//!   the entropy threshold and allowlists (a line allowlist waits for the
//!   match's line end, up to `LINE_CONTEXT` bytes);
//! - a block rule (private keys) continues after its match, piece by piece,
//!   until its footer or a piece fails; so does a match of a rule with capped
//!   repetitions that reached a cap (see `caps`), which is found by the
//!   rule's overflow finder when that matches no later than the regex;
//! - a rule is built when its first window opens (see
//!   [`CompiledRule::built`]); one that cannot be built matches its windows
//!   whole, so they are redacted.
//!
//! Whether a match found so far is final depends only on the next `L` bytes
//! (a match starting at `s` ends by `s + L`), so a stream holds back that
//! much and no more; see [`Scanner::frontier`].

use std::collections::VecDeque;

use regex_automata::util::captures::Captures;
use regex_automata::{Anchored, Input};

use super::rules::{CompiledRule, LINE_CONTEXT};
use super::Redactor;

/// One secret's byte range and the rule that found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Span {
    pub start: usize,
    pub end: usize,
    pub rule: u32,
    /// Continues the span that ended exactly at `start` (a block's, or a
    /// rule's that fails closed), so the two become one redaction even
    /// though they only touch.
    pub joins: bool,
}

/// More queued intervals than this and a rule searches them during the
/// keyword scan, so a long text does not pile them up.
const MAX_QUEUED_INTERVALS: usize = 64;

#[derive(Default)]
struct RuleState {
    /// Whether the rule runs in windows around prefilter hits (it has
    /// keywords, or a covered class prefix), not over all text.
    windowed: bool,
    /// Intervals still to search, in order; only the last can still grow.
    intervals: VecDeque<(usize, usize)>,
    /// Where the rule's next match may start (the end of its last one).
    next: usize,
    /// Inside a block: where its next piece starts.
    block: Option<usize>,
    /// Whether that block is the overflow of a capped repetition rather
    /// than the rule's own continuation.
    overflowing: bool,
    caps: Option<Captures>,
}

/// Positions are absolute: offsets into the whole text, of which the caller
/// passes the part `buf` starting at `base`.
pub(super) struct Scanner {
    /// Keyword starts below this have been reported.
    keyword_pos: usize,
    states: Vec<RuleState>,
    /// A bit per rule (64 to a word): set for every rule whose state may
    /// differ from a new scanner's (a window opened, or it was searched).
    /// [`Scanner::advance`] and [`Scanner::reset`] visit only these and the
    /// rules in `unwindowed`, not all rules: with fifty-odd rules, looping
    /// over every state was most of what a short clean text cost.
    touched: Vec<u64>,
    /// A bit per rule that runs over all text (its state starts with an
    /// interval), as [`Scanner::new`] decided.
    unwindowed: Vec<u64>,
    groups: Vec<Option<(usize, usize)>>,
    /// Where the secret of the last overflow finder match starts.
    overflow_start: usize,
}

/// The part of the text the scanner can see in one call.
#[derive(Clone, Copy)]
struct View<'a> {
    buf: &'a str,
    base: usize,
    end: usize,
    eof: bool,
}

impl Scanner {
    /// A scanner at the start of a text.
    pub fn new(r: &Redactor) -> Scanner {
        let states = r
            .rules
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                let mut s = RuleState {
                    windowed: !rule.keywords.is_empty(),
                    ..RuleState::default()
                };
                // A rule that could not be built fails closed over all text,
                // as it did without a prefix.
                if !s.windowed
                    && r.keywords.as_ref().is_some_and(|k| k.covers(i as u32))
                    && !rule.fails_closed()
                {
                    s.windowed = true;
                }
                if !s.windowed {
                    s.intervals.push_back((0, usize::MAX));
                }
                s
            })
            .collect::<Vec<RuleState>>();
        let words = states.len().div_ceil(64);
        let mut unwindowed = vec![0u64; words];
        for (i, s) in states.iter().enumerate() {
            if !s.windowed {
                unwindowed[i / 64] |= 1 << (i % 64);
            }
        }
        Scanner {
            keyword_pos: 0,
            states,
            touched: vec![0; words],
            unwindowed,
            groups: Vec::new(),
            overflow_start: 0,
        }
    }

    /// Back at the start of a text, as [`Scanner::new`] makes it, keeping
    /// what it allocated (interval queues, capture slots) for reuse.
    pub fn reset(&mut self) {
        // Every field named, so a new one cannot be left out here.
        let Scanner {
            keyword_pos,
            states,
            touched,
            unwindowed: _,
            groups,
            overflow_start,
        } = self;
        *keyword_pos = 0;
        groups.clear();
        *overflow_start = 0;
        // Only the touched states can differ from a new scanner's.
        let touched_rules = touched.iter_mut().enumerate().flat_map(|(w, word)| {
            let bits = std::mem::take(word);
            rules_in(w, bits)
        });
        for rule in touched_rules {
            let state = &mut states[rule];
            // `windowed` depends only on the redactor (its rules' keywords,
            // prefixes and whether each was built), so it stays as `new` set it.
            let RuleState {
                windowed,
                intervals,
                next,
                block,
                overflowing,
                caps: _,
            } = state;
            intervals.clear();
            if !*windowed {
                intervals.push_back((0, usize::MAX));
            }
            *next = 0;
            *block = None;
            *overflowing = false;
        }
    }

    /// Scans what `buf` (the text from `base` on) adds, appending every span
    /// that is now final to `spans`. `eof`: no text follows `buf`.
    pub fn advance(
        &mut self,
        r: &Redactor,
        buf: &str,
        base: usize,
        eof: bool,
        spans: &mut Vec<Span>,
    ) {
        let view = View {
            buf,
            base,
            end: base + buf.len(),
            eof,
        };
        if let Some(keywords) = &r.keywords {
            // A keyword starting within `max_len - 1` of the end may be cut off.
            let below = if eof {
                view.end
            } else {
                view.end.saturating_sub(keywords.max_len() - 1)
            }
            .max(self.keyword_pos);
            let from = self.keyword_pos - base;
            keywords.scan(buf.as_bytes(), from, below - base, |at, rules| {
                for &rule in rules {
                    let rule = rule as usize;
                    self.hit(r, rule, base + at);
                    if self.states[rule].intervals.len() > MAX_QUEUED_INTERVALS {
                        self.progress(r, rule, view, spans);
                    }
                }
            });
            self.keyword_pos = below;
        }
        // In rule order, as a loop over every rule would: the others have
        // nothing to search (no keyword of theirs occurred).
        for w in 0..self.touched.len() {
            for rule in rules_in(w, self.touched[w] | self.unwindowed[w]) {
                let state = &self.states[rule];
                if state.block.is_none() && state.intervals.is_empty() {
                    continue;
                }
                self.progress(r, rule, view, spans);
            }
        }
    }

    /// Marks every rule's state as possibly changed, so `advance` visits
    /// them all (for tests that compare that with visiting the touched ones).
    #[cfg(test)]
    pub fn touch_all(&mut self) {
        for rule in 0..self.states.len() {
            self.touch(rule);
        }
    }

    /// Marks `rule`'s state as possibly changed, for `reset` and `advance`.
    #[inline]
    fn touch(&mut self, rule: usize) {
        self.touched[rule / 64] |= 1 << (rule % 64);
    }

    /// The smallest position at which a span not yet reported may start.
    /// Text before it can be emitted; text from a little before it must be kept.
    pub fn frontier(&self, r: &Redactor, end: usize, eof: bool) -> usize {
        if eof {
            return end;
        }
        let mut frontier = end;
        for (rule, state) in r.rules.iter().zip(&self.states) {
            // `bound`, not the built regex's reach: the same whether or not
            // the rule has been built, and never less.
            let earliest = match (state.block, state.intervals.front()) {
                (Some(piece), _) => piece,
                (None, Some(&(start, _))) => state.next.max(start),
                (None, None) => state
                    .next
                    .max(self.keyword_pos.saturating_sub(rule.bound + rule.context)),
            };
            frontier = frontier.min(earliest);
        }
        frontier
    }

    /// Records a keyword hit of `rule` at `at`, building the rule if this is
    /// its first (the window's width is its regex's longest match).
    fn hit(&mut self, r: &Redactor, rule: usize, at: usize) {
        let reach = r.rules[rule].reach();
        let (start, end) = (at.saturating_sub(reach), at.saturating_add(reach));
        self.touch(rule);
        let intervals = &mut self.states[rule].intervals;
        match intervals.back_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => intervals.push_back((start, end)),
        }
    }

    /// Searches `rule`'s intervals as far as the text seen so far decides.
    fn progress(&mut self, r: &Redactor, rule: usize, view: View<'_>, spans: &mut Vec<Span>) {
        let compiled = &r.rules[rule];
        self.touch(rule);
        loop {
            if self.states[rule].block.is_some()
                && !self.continue_block(compiled, rule, view, spans)
            {
                return;
            }
            let state = &mut self.states[rule];
            let Some(&(start, end)) = state.intervals.front() else {
                return;
            };
            // A rule without keywords is built here, on its first interval.
            let reach = compiled.built().max_len;
            // An interval is final once no later keyword can widen it.
            let last = state.intervals.len() == 1;
            let is_final = view.eof
                || !last
                || (state.windowed && self.keyword_pos.saturating_sub(compiled.reach()) > end);
            state.next = state.next.max(start);
            let bound = end.min(view.end);
            if state.next >= bound {
                if is_final {
                    state.intervals.pop_front();
                    continue;
                }
                return;
            }
            // Fewer bytes left than the shortest match: the regex finds
            // nothing (it checks the same), so it is not set up to say so.
            let found = if bound - state.next < compiled.built().min_len {
                None
            } else {
                self.search(compiled, rule, view, bound)
            };
            let overflow = self.search_overflow(compiled, rule, view, bound, found);
            let found = overflow.or(found);
            let Some((m_start, m_end)) = found else {
                let state = &mut self.states[rule];
                if is_final {
                    state.next = bound;
                    state.intervals.pop_front();
                    continue;
                }
                state.next = state.next.max(bound.saturating_sub(reach));
                return;
            };
            // A match is final when more text could not change it: it
            // starts far enough from the end of what is known.
            if !is_final && m_start + reach >= bound {
                let state = &mut self.states[rule];
                state.next = state.next.max(bound.saturating_sub(reach));
                return;
            }
            // A line allowlist needs the match's line: wait for its end
            // (or LINE_CONTEXT bytes), so every split decides alike.
            if !view.eof && compiled.needs_line && overflow.is_none() {
                let after = &view.buf.as_bytes()[m_end - view.base..];
                if after.len() < LINE_CONTEXT && !after.contains(&b'\n') {
                    return;
                }
            }
            let secret = if overflow.is_some() {
                // The secret goes on past the cap: the whole prefix is
                // redacted (it has no groups) and the overflow takes the rest.
                compiled.overflow_secret(
                    view.buf,
                    m_start - view.base,
                    self.overflow_start - view.base,
                    m_end - view.base,
                )
            } else {
                compiled.secret(
                    view.buf,
                    m_start - view.base,
                    m_end - view.base,
                    &self.groups,
                )
            };
            let state = &mut self.states[rule];
            state.next = m_end;
            if let Some((s, e)) = secret {
                spans.push(Span {
                    start: view.base + s,
                    end: view.base + e,
                    rule: rule as u32,
                    joins: compiled.fails_closed(),
                });
                if overflow.is_some() {
                    state.block = Some(m_end);
                    state.overflowing = true;
                } else if compiled.built().block.is_some() {
                    state.block = Some(m_end);
                    state.overflowing = false;
                }
            }
        }
    }

    /// The leftmost match of `rule` in `next..bound`, with its groups in
    /// `self.groups` when the rule needs them.
    fn search(
        &mut self,
        compiled: &CompiledRule,
        rule: usize,
        view: View<'_>,
        bound: usize,
    ) -> Option<(usize, usize)> {
        let state = &mut self.states[rule];
        let input = Input::new(view.buf.as_bytes()).span(state.next - view.base..bound - view.base);
        let regex = &compiled.built().regex;
        let buf = view.buf;
        if !compiled.needs_groups() {
            let m = regex.search(&input)?;
            let (s, e) = widen(buf, m.start(), m.end());
            return Some((view.base + s, view.base + e));
        }
        let caps = state.caps.get_or_insert_with(|| regex.create_captures());
        regex.search_captures(&input, caps);
        let m = caps.get_match()?;
        self.groups.clear();
        for g in 1..caps.group_len() {
            self.groups
                .push(caps.get_group(g).map(|s| widen(buf, s.start, s.end)));
        }
        let (s, e) = widen(buf, m.start(), m.end());
        Some((view.base + s, view.base + e))
    }

    /// The leftmost match of `rule`'s overflow finder in `next..bound`, when
    /// the rule has one and a repetition reached its cap there: the regex's
    /// own match (`found`) starts later, or starts there and covers the
    /// finder's match (a lazy `[\s\S]{64,}?` that stopped at its suffix
    /// covers less, and is a whole match).
    fn search_overflow(
        &mut self,
        compiled: &CompiledRule,
        rule: usize,
        view: View<'_>,
        bound: usize,
        found: Option<(usize, usize)>,
    ) -> Option<(usize, usize)> {
        let overflow = compiled.built().overflow.as_ref()?;
        let state = &self.states[rule];
        // A finder match counts only if it starts by the regex's own match,
        // so it ends within the finder's reach of that start.
        let end = match found {
            Some((start, _)) => bound.min(start + overflow.max_len),
            None => bound,
        };
        let span = state.next - view.base..end - view.base;
        // A repetition at its cap is a long run of its bytes: without one,
        // no finder match (a byte loop, much cheaper than the automaton).
        let (set, len) = &overflow.run;
        if !super::caps::has_run(&view.buf.as_bytes()[span.clone()], set, *len) {
            return None;
        }
        let input = Input::new(view.buf.as_bytes()).span(span);
        let mut caps = overflow.finder.create_captures();
        overflow.finder.search_captures(&input, &mut caps);
        let m = caps.get_match()?;
        let (s, e) = widen(view.buf, m.start(), m.end());
        let (s, e) = (view.base + s, view.base + e);
        match found {
            Some((start, _)) if start < s => None,
            Some((start, end)) if start == s && end < e => None,
            _ => {
                // Where the secret starts: its group, else the whole match.
                let secret = caps
                    .get_group(1)
                    .map_or(s, |g| view.base + widen(view.buf, g.start, g.end).0);
                self.overflow_start = secret;
                Some((s, e))
            }
        }
    }

    /// Takes a block's pieces as far as the text decides them. Returns
    /// whether the block is over (searching goes on) or waits for text.
    fn continue_block(
        &mut self,
        compiled: &CompiledRule,
        rule: usize,
        view: View<'_>,
        spans: &mut Vec<Span>,
    ) -> bool {
        let state = &mut self.states[rule];
        let built = compiled.built();
        let block = if state.overflowing {
            built.overflow.as_ref().map(|o| &o.block)
        } else {
            built.block.as_ref()
        };
        let Some(block) = block else {
            state.block = None;
            return true;
        };
        while let Some(at) = state.block {
            let anchored = |re: &regex_automata::meta::Regex, max: usize| {
                if !view.eof && view.end - at <= max {
                    return Err(());
                }
                let input = Input::new(view.buf.as_bytes())
                    .span(at - view.base..view.end - view.base)
                    .anchored(Anchored::Yes);
                Ok(re
                    .search(&input)
                    .map(|m| view.base + widen(view.buf, m.start(), m.end()).1)
                    .filter(|&e| e > at))
            };
            let (first, first_max, then, then_max) = if block.footer_first {
                (
                    &block.footer,
                    block.footer_max,
                    &block.piece,
                    block.piece_max,
                )
            } else {
                (
                    &block.piece,
                    block.piece_max,
                    &block.footer,
                    block.footer_max,
                )
            };
            // Footer first: a footer ends the block, a piece continues it.
            // Piece first: a piece continues it; after the last one, a
            // footer that follows is taken too, and ends it.
            let Ok(hit) = anchored(first, first_max) else {
                return false;
            };
            let (end, more) = match hit {
                Some(end) => (end, !block.footer_first),
                None => match anchored(then, then_max) {
                    Err(()) => return false,
                    Ok(Some(end)) => (end, block.footer_first),
                    Ok(None) => {
                        state.block = None;
                        state.next = state.next.max(at);
                        return true;
                    }
                },
            };
            spans.push(Span {
                start: at,
                end,
                rule: rule as u32,
                joins: true,
            });
            state.next = state.next.max(end);
            state.block = more.then_some(end);
        }
        true
    }
}

/// The rules whose bits are set in `bits`, word `w` of a rule bit set, in order.
#[inline]
fn rules_in(w: usize, mut bits: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (bits != 0).then(|| {
            let bit = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            w * 64 + bit
        })
    })
}

/// `start..end` of `buf` widened to character boundaries: a byte class (see
/// `caps`) can stop inside a character, and then the whole character goes.
fn widen(buf: &str, mut start: usize, mut end: usize) -> (usize, usize) {
    while !buf.is_char_boundary(start) {
        start -= 1;
    }
    while !buf.is_char_boundary(end) {
        end += 1;
    }
    (start, end)
}
