/** The parser's output (the package ships no types): one family per metric name, values as text. */
declare module 'parse-prometheus-text-format' {
  interface Sample {
    readonly labels?: Readonly<Record<string, string>>
    /** Counters, gauges and untyped samples. */
    readonly value?: string
    /** Histograms: the cumulative count per upper bound (`le`), and the count and sum. */
    readonly buckets?: Readonly<Record<string, string>>
    readonly count?: string
    readonly sum?: string
  }
  interface MetricFamily {
    readonly name: string
    readonly help: string
    readonly type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED'
    readonly metrics: readonly Sample[]
  }
  export default function parsePrometheusTextFormat(text: string): MetricFamily[]
}
