# pool-summary.jq - a human summary of `table` records (as-show --no-header --head 0 | jq -rs -f)
def pad(n): tostring | (" " * ([n - length, 0] | max)) + .;
def r2: . * 100 | round / 100;
"tables: \(length), batch: \(.[0].batch), lookups: \(map(.lookups) | add)",
"rows (hash size) max/mean/min: \(map(.rows) | max) / \((map(.rows) | add) / length | floor) / \(map(.rows) | min)",
"pooling factor max/mean/min: \(map(.pooling) | max | r2) / \((map(.pooling) | add) / length | r2) / \(map(.pooling) | min | r2)",
"empty tables: \(map(select(.lookups == 0)) | length); dims: \(map(.dim) | group_by(.) | map("\(.[0]) x\(length)") | join(", "))",
"",
"first tables:",
"  id      rows  pooling  dim",
(.[0:8][] | "  \(.id | pad(2))  \(.rows | pad(8))  \(.pooling | r2 | pad(7))  \(.dim)")
