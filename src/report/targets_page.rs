//! The HTML page of many reports — a run over `--targets`, or `report merge` of many files — that
//! stays usable in a browser at 10,000 parts: the summary first (verdict, why, counts by level
//! and status, notes), then a matrix with one row per part (name, verdict, counts, failing cases;
//! filtered, sorted and paged by the page's script, which builds only the rows shown), and each
//! part's cases embedded as JSON (a line per part, a hundred parts to a `<script
//! type="application/json">` block) that becomes DOM only when its row is opened. A case is shown as
//! the one-report page shows it (verdict, level, id, title, evidence, duration, message; failures
//! open), its request, answer and command shortened to [`html::EXCERPT`] — except a passing case's,
//! which are left to the target's own report (they would be most of the page).
//!
//! Written as parts come, in memory flat in their number: [`TargetsPage::add`] keeps a small
//! [`Row`] per part (its name, verdict, counts and at most [`KEPT_IDS`] failing case ids) and
//! writes the part's cases to a spool file next to the page; [`TargetsPage::finish`] writes the
//! head, the rows, the script and the spool into a temporary file renamed onto the page. The spool
//! (and the temporary file) are removed however the page ends.
//!
//! Everything from the run is hostile: the markup here is escaped by [`html::escape`], the script
//! puts text into the page only through `textContent`, and the JSON blocks have `<`, `>`, `&`,
//! U+2028 and U+2029 written as `\uXXXX` so that an agent's `</script>` cannot end a block.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::html::{self, escape, LevelTable, Verdict};
use super::{console, CaseResult, Exchange, Exit, Report, Summary};
use crate::text::shorten;

/// Failing case ids a row keeps (the rest are counted).
pub const KEPT_IDS: usize = 6;
/// Most characters of a kept case id, and of a row's reason.
const ID_CHARS: usize = 160;
/// Most characters of a case's message in the page (the part's own report holds it whole).
const MESSAGE_CHARS: usize = 8_000;
/// Parts per data block.
const CHUNK: usize = 100;
/// Targets whose names the header lists when they fail the run.
const NAMED_IN_WHY: usize = 8;
/// The serialization buffer is given back past this size, so that one huge part does not hold
/// memory until the page is finished.
const BUF_KEPT: usize = 1 << 20;

/// Makes the spool and temporary names of pages written by one process distinct.
static PAGES: AtomicU64 = AtomicU64::new(0);

/// What the matrix keeps of one part.
#[derive(Debug)]
struct Row {
    name: Box<str>,
    passed: bool,
    /// Cut short (Ctrl-C, SIGTERM): no verdict.
    interrupted: bool,
    summary: Counts,
    /// The first [`KEPT_IDS`] cases that fail the run.
    failing: Vec<Box<str>>,
    /// How many more fail it.
    more: usize,
    /// Why the part fails when no case does (nothing judged, a score below --min-score).
    reason: Option<Box<str>>,
}

/// A row's counts: passed, failed (failing the run), warnings, skipped.
#[derive(Debug, Clone, Copy)]
struct Counts([usize; 4]);

impl Row {
    /// The bytes this row holds (its strings' and its vector's).
    fn kept_bytes(&self) -> usize {
        std::mem::size_of::<Row>()
            + self.name.len()
            + self.failing.capacity() * std::mem::size_of::<Box<str>>()
            + self.failing.iter().map(|id| id.len()).sum::<usize>()
            + self.reason.as_ref().map_or(0, |r| r.len())
    }

    fn word(&self) -> &'static str {
        if self.interrupted {
            "INTERRUPTED"
        } else if self.passed {
            "PASS"
        } else {
            "FAIL"
        }
    }
}

/// A row as the page's script reads it: `[name, verdict, passed, failed, warnings, skipped,
/// [failing ids], more, reason]`.
impl Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let [passed, failed, warnings, skipped] = self.summary.0;
        (
            &self.name,
            self.word(),
            passed,
            failed,
            warnings,
            skipped,
            &self.failing,
            self.more,
            &self.reason,
        )
            .serialize(s)
    }
}

/// A part's block: what the script shows when its row is opened.
#[derive(Serialize)]
struct PartData<'a> {
    name: &'a str,
    target: &'a str,
    why: String,
    counts: String,
    notes: &'a [String],
    cases: Vec<ShownCase<'a>>,
}

/// A case as the page holds it: its fields as in the JSON report (shortened where long), and
/// how it is shown.
#[derive(Serialize)]
struct ShownCase<'a> {
    #[serde(flatten)]
    case: Cow<'a, CaseResult>,
    shown: Shown,
}

#[derive(Serialize)]
struct Shown {
    word: &'static str,
    class: &'static str,
    /// Shown expanded: it fails the run.
    open: bool,
    /// `(judged 3 answers) (30 ms)`.
    after: String,
}

impl<'a> ShownCase<'a> {
    fn of(report: &Report, case: &'a CaseResult) -> ShownCase<'a> {
        let verdict = Verdict::of(report, case);
        // A passing case's request and answer are left to the target's own report: at 10,000
        // targets they would be most of the page (a conforming agent's report holds ~200 KB of
        // them), and its reader looks for failures. The others are shortened, control
        // characters made visible, as the one-report page shows them.
        let keep = case.status != super::Status::Pass;
        let short = |text: &Option<String>| {
            text.as_ref()
                .filter(|_| keep)
                .map(|t| shorten(t, html::EXCERPT))
        };
        let e = &case.exchange;
        let exchange = Exchange {
            request: short(&e.request),
            response: short(&e.response),
            reproduce: short(&e.reproduce),
        };
        let case = if case.message.len() > MESSAGE_CHARS || exchange != case.exchange {
            Cow::Owned(CaseResult {
                id: case.id.clone(),
                group: case.group.clone(),
                level: case.level,
                kind: case.kind,
                status: case.status,
                title: case.title.clone(),
                spec: case.spec.clone(),
                message: if case.message.len() > MESSAGE_CHARS {
                    shorten(&case.message, MESSAGE_CHARS)
                } else {
                    case.message.clone()
                },
                evidence: case.evidence.clone(),
                duration_ms: case.duration_ms,
                duration_us: case.duration_us,
                exchange,
                precondition: case.precondition,
            })
        } else {
            Cow::Borrowed(case)
        };
        ShownCase {
            shown: Shown {
                word: verdict.word,
                class: verdict.class,
                open: verdict.blocking,
                after: html::after_title(&case),
            },
            case,
        }
    }
}

/// A file next to the page that is removed when dropped, unless kept.
struct Sibling {
    path: PathBuf,
    kept: bool,
}

impl Sibling {
    /// `.PAGE.PID-N.WHAT` in the page's folder.
    fn of(page: &Path, what: &str, n: u64) -> Sibling {
        let name = page
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "page.html".into());
        Sibling {
            path: page.with_file_name(format!(".{name}.{}-{n}.{what}", std::process::id())),
            kept: false,
        }
    }
}

impl Drop for Sibling {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The HTML page of many reports, written as they come (see the module's documentation).
pub struct TargetsPage {
    path: PathBuf,
    n: u64,
    spool: BufWriter<File>,
    // Declared after `spool`, so that the file is closed before it is removed.
    spool_file: Sibling,
    rows: Vec<Row>,
    table: LevelTable,
    buf: Vec<u8>,
}

impl TargetsPage {
    /// Starts the page that will be written to `path` (spooling next to it).
    pub fn create(path: &Path) -> io::Result<TargetsPage> {
        let n = PAGES.fetch_add(1, Ordering::Relaxed);
        let spool_file = Sibling::of(path, "spool", n);
        let spool = BufWriter::new(File::create(&spool_file.path)?);
        Ok(TargetsPage {
            path: path.to_path_buf(),
            n,
            spool,
            spool_file,
            rows: Vec::new(),
            table: LevelTable::default(),
            buf: Vec::new(),
        })
    }

    /// Adds one part (a target, or a file of `report merge`): its name and its report as read (ids not prefixed).
    pub fn add(&mut self, name: &str, report: &Report) -> io::Result<()> {
        let index = self.rows.len();
        // Counted from the cases (not the summary as read), as the console counts them.
        let mut summary = Summary::of(&report.cases);
        if !report.strict {
            summary.warnings = summary.failed_should;
        }
        let mut failing = Vec::new();
        let mut more = 0;
        for c in report.cases.iter().filter(|c| report.is_blocking(c)) {
            if failing.len() < KEPT_IDS {
                failing.push(shorten(&c.id, ID_CHARS).into_boxed_str());
            } else {
                more += 1;
            }
        }
        let exit = report.exit_code();
        let passed = exit == Exit::Passed;
        let why = html::exit_why(report);
        let counts = console::counts(&summary);
        // An interrupted part says so in its row, failing cases or not.
        let reason = (!passed && (failing.is_empty() || exit == Exit::Interrupted)).then(|| {
            let why = why.split_once(": ").map_or(why.as_str(), |(_, w)| w);
            shorten(why, ID_CHARS).into_boxed_str()
        });
        self.table.add(&report.cases);

        let data = PartData {
            name,
            target: &report.target,
            why,
            counts,
            notes: &report.notes,
            cases: report
                .cases
                .iter()
                .map(|c| ShownCase::of(report, c))
                .collect(),
        };
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, &data)?;
        // Parts go [`CHUNK`] to a block, a line each (serde_json writes no raw newline): the
        // page holds a hundredth as many elements, and the script parses only the line it opens.
        if index.is_multiple_of(CHUNK) {
            if index > 0 {
                self.spool.write_all(b"</script>\n")?;
            }
            write!(
                self.spool,
                "<script type=\"application/json\" id=\"c-{}\">",
                index / CHUNK
            )?;
        }
        write_script_json(&mut self.spool, &self.buf)?;
        self.spool.write_all(b"\n")?;
        if self.buf.capacity() > BUF_KEPT {
            self.buf = Vec::new();
        }
        failing.shrink_to_fit();
        self.rows.push(Row {
            name: name.into(),
            passed,
            interrupted: exit == Exit::Interrupted,
            summary: Counts([
                summary.passed,
                summary.failing(),
                summary.warnings,
                summary.skipped,
            ]),
            failing,
            more,
            reason,
        });
        Ok(())
    }

    /// Writes the page: `head` is the merged report without its cases (title, target, seed, summary, notes, started_at, duration…), `exit` the merged run's exit.
    pub fn finish(mut self, head: &Report, exit: Exit) -> io::Result<()> {
        self.spool.flush()?;
        let mut tmp = Sibling::of(&self.path, "tmp", self.n);
        let mut out = BufWriter::new(File::create(&tmp.path)?);
        out.write_all(self.head(head, exit).as_bytes())?;
        out.write_all(b"<script type=\"application/json\" id=\"rows\">[")?;
        for (i, row) in self.rows.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            self.buf.clear();
            serde_json::to_writer(&mut self.buf, row)?;
            write_script_json(&mut out, &self.buf)?;
        }
        out.write_all(b"]</script>\n<script>")?;
        out.write_all(SCRIPT.replace("CHUNK_SIZE", &CHUNK.to_string()).as_bytes())?;
        // The script comes before the parts' blocks: the matrix is drawn while they load.
        out.write_all(b"</script></main>\n")?;
        io::copy(&mut File::open(&self.spool_file.path)?, &mut out)?;
        if !self.rows.is_empty() {
            out.write_all(b"</script>\n")?;
        }
        out.write_all(b"</body></html>\n")?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp.path, &self.path)?;
        tmp.kept = true;
        Ok(())
    }

    /// The bytes the rows hold: what the page keeps in memory per part.
    pub fn kept_bytes(&self) -> usize {
        self.rows.iter().map(Row::kept_bytes).sum()
    }

    /// The page up to the matrix's data: header, facts, counts, notes, the matrix's controls.
    fn head(&self, head: &Report, exit: Exit) -> String {
        let passed = exit == Exit::Passed;
        let word = html::verdict_word(exit);
        let failed = self.rows.iter().filter(|r| !r.passed).count();
        let mut out = String::with_capacity(16 * 1024);
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
        out.push_str(&format!(
            "<title>agent-tck {} · {word}</title><style>{}{STYLE}</style></head><body>",
            escape(&head.title()),
            html::STYLE,
        ));
        out.push_str(&format!(
            "<header class=\"{}\"><h1>{word} · {}</h1><p>{}</p></header><main>",
            if passed { "pass" } else { "fail" },
            escape(&head.title()),
            escape(&self.why(head, passed, failed)),
        ));
        // A merge of many targets names them all: the facts show the beginning.
        let mut shown = head.clone();
        shown.cases = Vec::new();
        shown.target = shorten(&head.target, 600);
        html::facts(&mut out, &shown);
        self.table.write(&mut out);
        html::notes(&mut out, &shown);
        out.push_str(&format!(
            "<h2>Targets</h2><p class=\"targets\">{}: {} passed, {failed} failed</p>",
            crate::text::count(self.rows.len() as u64, "targets"),
            self.rows.len() - failed
        ));
        if self.rows.is_empty() {
            out.push_str(
                "<p class=\"empty\">No target in this report: a shard that held no target of \
                 the list probed nothing.</p>",
            );
        }
        out.push_str(
            "<div class=\"filters\"><span><label><input type=\"radio\" name=\"show\" value=\"failed\">failed</label> \
             <label><input type=\"radio\" name=\"show\" value=\"all\" checked>all</label></span>\
             <label>order <select id=\"sort\"><option value=\"failing\">failed first</option>\
             <option value=\"list\">as listed</option><option value=\"name\">by name</option>\
             <option value=\"most\">most failing cases</option></select></label>\
             <label>search <input id=\"text\" type=\"search\" placeholder=\"target, case id\"></label>\
             <span class=\"pager\"><button id=\"prev\" type=\"button\">‹ previous</button> \
             <span id=\"shown\"></span> <button id=\"next\" type=\"button\">next ›</button></span></div>\
             <table class=\"matrix\"><thead><tr><th>target</th><th>verdict</th><th>passed</th>\
             <th>failed</th><th>warnings</th><th>skipped</th><th>failing cases</th></tr></thead>\
             <tbody id=\"matrix\"></tbody></table>\
             <noscript><p>The table of targets and their cases is drawn by the page's script: \
             allow JavaScript to see it (each target's own report is in the run's --out-dir).</p></noscript>\n",
        );
        out
    }

    /// Why the merged run exits as it does.
    fn why(&self, head: &Report, passed: bool, failed: usize) -> String {
        let total = self.rows.len();
        if passed {
            return format!(
                "exit 0: none of the {} fails the run",
                crate::text::count(total as u64, "targets")
            );
        }
        let mut reasons = Vec::new();
        // An interrupted part is named as such below, not as a failing one.
        let failed = failed - self.rows.iter().filter(|r| r.interrupted).count();
        if failed > 0 {
            let names: Vec<&str> = self
                .rows
                .iter()
                .filter(|r| !r.passed && !r.interrupted)
                .take(NAMED_IN_WHY)
                .map(|r| &*r.name)
                .collect();
            let more = failed - names.len();
            reasons.push(format!(
                "{failed} of {} {} the run: {}{}",
                crate::text::count(total as u64, "targets"),
                if failed == 1 { "fails" } else { "fail" },
                names.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        if head.below_min_score() {
            reasons.push("the evaluation score is below --min-score".into());
        }
        if let Some(cut) = &head.interrupted {
            let parts = self.rows.iter().filter(|r| r.interrupted).count();
            return format!(
                "exit 130: {} — {parts} of {} interrupted{}",
                cut.headline(),
                crate::text::count(total as u64, "parts"),
                if reasons.is_empty() {
                    String::new()
                } else {
                    format!(" (before it: {})", reasons.join("; "))
                }
            );
        }
        reasons.extend(head.nothing_judged_reason());
        if reasons.is_empty() {
            reasons.push("the merged run fails".into());
        }
        format!("exit 1: {}", reasons.join("; "))
    }
}

/// Writes JSON into a `<script type="application/json">` block: `<`, `>` and `&` (only ever
/// inside strings in JSON) as `\u003c`, `\u003e`, `\u0026`, so that no `</script>` or `<!--`
/// ends or bends the block, and U+2028/U+2029 as escapes too.
fn write_script_json(out: &mut impl Write, json: &[u8]) -> io::Result<()> {
    let mut start = 0;
    let mut i = 0;
    while i < json.len() {
        let escaped: Option<(&[u8], usize)> = match json[i] {
            b'<' => Some((b"\\u003c", 1)),
            b'>' => Some((b"\\u003e", 1)),
            b'&' => Some((b"\\u0026", 1)),
            0xE2 if json.get(i + 1) == Some(&0x80) && json.get(i + 2) == Some(&0xA8) => {
                Some((b"\\u2028", 3))
            }
            0xE2 if json.get(i + 1) == Some(&0x80) && json.get(i + 2) == Some(&0xA9) => {
                Some((b"\\u2029", 3))
            }
            _ => None,
        };
        match escaped {
            Some((with, len)) => {
                out.write_all(&json[start..i])?;
                out.write_all(with)?;
                i += len;
                start = i;
            }
            None => i += 1,
        }
    }
    out.write_all(&json[start..])
}

/// What the matrix and an opened part add to the one-report page's style.
const STYLE: &str = r#"
.targets{margin:4px 0}
.pager{margin-left:auto}
table.matrix{width:100%;background:#fff}
table.matrix tr.row{cursor:pointer} table.matrix tr.row:hover,table.matrix tr.row:focus{background:#eef1f5}
table.matrix th:nth-child(2),table.matrix td:nth-child(2),table.matrix th:last-child{text-align:left}
table.matrix td.ids{text-align:left;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
table.matrix td.part{text-align:left;background:#f6f7f9;padding:8px 14px 14px}
"#;

/// The matrix (filter, order, pages of [`PAGE_ROWS`] rows) and a part's cases on demand; every
/// string from the run goes in as `textContent`.
const SCRIPT: &str = r#"
(function(){
  var root=document.documentElement,PAGE=100,CHUNK=CHUNK_SIZE,page=0,open={},order=[];
  var rows=JSON.parse(document.getElementById('rows').textContent);
  var hay=rows.map(function(r){return (r[0]+' '+r[6].join(' ')).toLowerCase();});
  var show=document.getElementsByName('show'),sort=document.getElementById('sort'),text=document.getElementById('text');
  var body=document.getElementById('matrix'),shown=document.getElementById('shown');
  var prev=document.getElementById('prev'),next=document.getElementById('next');
  function el(tag,cls,txt){var e=document.createElement(tag);if(cls){e.className=cls;}if(txt!==undefined){e.textContent=txt;}return e;}
  function select(){
    var mode='all';for(var i=0;i<show.length;i++){if(show[i].checked){mode=show[i].value;}}
    var q=text.value.toLowerCase(),out=[];
    for(var j=0;j<rows.length;j++){
      if(mode==='failed'&&rows[j][1]==='PASS'){continue;}
      if(q&&hay[j].indexOf(q)<0){continue;}
      out.push(j);
    }
    var by=sort.value;
    if(by==='failing'){out.sort(function(a,b){return (rows[a][1]==='PASS')-(rows[b][1]==='PASS')||a-b;});}
    else if(by==='most'){out.sort(function(a,b){return rows[b][3]-rows[a][3]||a-b;});}
    else if(by==='name'){out.sort(function(a,b){return rows[a][0]<rows[b][0]?-1:rows[a][0]>rows[b][0]?1:a-b;});}
    return out;
  }
  function part(i,td){
    // Part i is line i%CHUNK of block c-(i/CHUNK); a block still being read gives no line or a
    // cut one: drawn again when the whole page is read.
    var block=document.getElementById('c-'+Math.floor(i/CHUNK)),p=null;
    try{p=JSON.parse(block.textContent.split('\n')[i%CHUNK]);}catch(e){p=null;}
    if(!p){td.appendChild(el('p','label',document.readyState==='loading'?'loading this target\u2019s cases\u2026':'this target\u2019s cases are not in the page'));return;}
    td.appendChild(el('p','',p.why));
    td.appendChild(el('p','label',p.target+' \u00b7 '+p.counts));
    td.appendChild(el('p','label','The requests and answers of passing cases are in each target\u2019s own report.'));
    if(p.notes.length){var ul=el('ul','notes');p.notes.forEach(function(n){ul.appendChild(el('li','',n));});td.appendChild(ul);}
    var group=null,sec=null;
    p.cases.forEach(function(c){
      if(sec===null||c.group!==group){group=c.group;sec=el('section','group');sec.appendChild(el('h3','',group));td.appendChild(sec);}
      var d=el('details','case');d.open=c.shown.open;
      var s=el('summary');s.appendChild(el('span','w '+c.shown['class'],c.shown.word));
      s.appendChild(document.createTextNode(' '+c.level+' '+c.id+' '));
      s.appendChild(el('span','label','\u2014 '+c.title+' '+c.shown.after));
      d.appendChild(s);
      var b=el('div','body');
      if(c.message){b.appendChild(el('pre','',c.message));}
      b.appendChild(el('div','label','rule: '+c.title+' \u00b7 spec: '+c.spec+' \u00b7 '+c.kind));
      var x=c.exchange||{};
      [['request','request'],['response','answer (excerpt)'],['reproduce','reproduce']].forEach(function(e){
        if(typeof x[e[0]]==='string'){b.appendChild(el('div','label',e[1]));b.appendChild(el('pre','',x[e[0]]));}
      });
      d.appendChild(b);sec.appendChild(d);
    });
  }
  function toggle(i){if(open[i]){delete open[i];}else{open[i]=1;}render();}
  function row(i){
    var r=rows[i],tr=el('tr','row');tr.id='t-'+i;tr.tabIndex=0;
    tr.appendChild(el('td','',r[0]));
    var v=el('td');v.appendChild(el('span','w '+(r[1]==='PASS'?'PASS':'FAIL'),r[1]));tr.appendChild(v);
    for(var c=2;c<6;c++){tr.appendChild(el('td','',String(r[c])));}
    tr.appendChild(el('td','ids',r[6].length?r[6].join(', ')+(r[7]?' and '+r[7]+' more':''):(r[8]||'-')));
    tr.addEventListener('click',function(){toggle(i);});
    tr.addEventListener('keydown',function(e){if(e.key==='Enter'){toggle(i);}});
    body.appendChild(tr);
    if(open[i]){var d=el('tr');var td=el('td','part');td.colSpan=7;part(i,td);d.appendChild(td);body.appendChild(d);}
  }
  function render(){
    var pages=Math.max(1,Math.ceil(order.length/PAGE));page=Math.max(0,Math.min(page,pages-1));
    var from=page*PAGE,to=Math.min(order.length,from+PAGE);
    body.textContent='';
    for(var k=from;k<to;k++){row(order[k]);}
    shown.textContent=order.length?('targets '+(from+1)+'\u2013'+to+' of '+order.length+(order.length<rows.length?' shown ('+rows.length+' in all)':'')):(rows.length?'no target matches':'no target');
    prev.disabled=page===0;next.disabled=page>=pages-1;
  }
  function again(){order=select();page=0;render();}
  for(var i=0;i<show.length;i++){show[i].addEventListener('change',again);}
  sort.addEventListener('change',again);text.addEventListener('input',again);
  prev.addEventListener('click',function(){page--;render();});
  next.addEventListener('click',function(){page++;render();});
  order=select();
  // #p-N opens part N on its page of the matrix.
  var m=/^#p-(\d+)$/.exec(location.hash);
  if(m&&+m[1]<rows.length){open[+m[1]]=1;page=Math.floor(order.indexOf(+m[1])/PAGE);}
  render();
  root.setAttribute('data-filters','ready');
  root.setAttribute('data-ready-ms',String(Math.round(performance.now())));
  document.addEventListener('DOMContentLoaded',function(){
    root.setAttribute('data-loaded-ms',String(Math.round(performance.now())));
    if(Object.keys(open).length){render();}
  });
})();
"#;

#[cfg(test)]
mod tests;
