# case: HL402 real https://github.com/timtadh/zhang-shasha/issues/57
# A pdb.set_trace() left in the library's distance computation.
import pdb


def distance(a, b, get_children, insert_cost, remove_cost, update_cost):
    operations = []
    for node in get_children(a):
        cost = update_cost(node, b)
        if cost < 0:
            pdb.set_trace()  # expect: HL402
        operations.append(cost)
    return sum(operations)
