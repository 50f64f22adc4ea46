// EchoMQ: numbers, durations and times as the page shows them, in one place.
// Each function says the same as its twin in dashboard/shared/formatting.py (the
// server's first render and a live update of the same number must read the
// same); tests/e2e/test_formatting.py runs both on one table of values.

// 1204331 -> "1,204,331" (formatting.thousands).
export function thousands(n) { return Number(n).toLocaleString("en-US"); }

// n / size to one decimal as Python's format(x, ".1f") writes it: the double's
// exact value rounded, a tie (exactly halfway, as 1.25 is) to the even digit,
// where toFixed would take the larger (1.3k here beside the server's 1.2k).
function oneDecimal(n, size) {
  var twice = 20 * n / size;  // 2m+1 for a tie in decimals; exact in binary only if 5 divides it
  if (Number.isInteger(twice) && twice % 2 !== 0 && twice % 5 === 0) {
    var below = Math.floor(twice / 2);
    return ((below % 2 === 0 ? below : below + 1) / 10).toFixed(1);
  }
  return (n / size).toFixed(1);
}

// 1204331 -> "1.2M", 3200 -> "3.2k" (formatting.compact; the exact value goes in a title).
export function compact(n) {
  var units = [[1e9, "G"], [1e6, "M"], [1e3, "k"]];
  for (var i = 0; i < units.length; i++) {
    if (Math.abs(n) >= units[i][0]) return oneDecimal(n, units[i][0]).replace(/\.0$/, "") + units[i][1];
  }
  return String(n);
}

var YEAR_S = 365 * 86400;

// A duration for humans: "340 ms", "4.2 s", "3 min", "2 h", "5 d", "73 years" (formatting.span).
export function span(ms) {
  var seconds = Math.abs(ms) / 1000;
  if (seconds < 1) return Math.abs(ms) + " ms";
  if (seconds < 60) return (oneDecimal(Math.abs(ms), 1000) + " s").replace(".0 s", " s");
  if (seconds >= 2 * YEAR_S) return Math.floor(seconds / YEAR_S) + " years";
  var units = [[86400, "d"], [3600, "h"], [60, "min"]];
  for (var i = 0; i < units.length; i++) {
    if (seconds >= units[i][0]) return Math.floor(seconds / units[i][0]) + " " + units[i][1];
  }
  return Math.floor(seconds) + " s";
}

// "running 42 s", "running 3 min" (presenters.running_label).
export function running(ms) {
  var seconds = Math.floor(Math.max(0, ms) / 1000);
  return "running " + (seconds < 60 ? seconds + " s" : span(seconds * 1000));
}

// "1 failure", "1,204 failures" (formatting.failures): what the charts count.
export function failures(n) { return thousands(n) + (n === 1 ? " failure" : " failures"); }

// "1 job", "25 jobs": what an action acts on.
export function jobs(n) { return thousands(n) + (n === 1 ? " job" : " jobs"); }

// "09:14 UTC": the minute of a chart's point.
export function utcMinute(ms) {
  var d = new Date(ms);
  var pad = function (n) { return (n < 10 ? "0" : "") + n; };
  return pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + " UTC";
}
