# case: HL402 real https://github.com/pnuu/fmiopendata/pull/26
# A forgotten debugger line in the parser.
import ipdb


def parse(records):
    data = {}
    for record in records:
        ipdb.set_trace()  # expect: HL402
        data[record["id"]] = record["value"]
    return data
