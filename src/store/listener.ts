// The statement `meterflow clickhouse-server` runs in clickhouse-local (src/clickhouse-server):
// open ClickHouse's HTTP listener, then block on a read of the control FIFO, which keeps the
// listener up until the FIFO is written to. Here because store/ owns all SQL.
export function listenUntilFifoWritten(fifo: string): string {
  const quoted = fifo.replace(/\\/g, '\\\\').replace(/'/g, "\\'")
  return (
    'SYSTEM START LISTEN HTTP; ' +
    `SELECT * FROM file('${quoted}', 'RawBLOB') ` +
    `SETTINGS storage_file_read_method = 'read' FORMAT Null`
  )
}
