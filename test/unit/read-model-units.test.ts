import { expect } from 'chai';
import { allProjections, readModelUnits } from '../../projections/index.js';

/**
 * `scores worker` projects the read models one leased unit each (docs/scaling.md, "Projections
 * per read model"): a projection in no unit would never be projected in a split deployment, and
 * every process following the read models would wait for its checkpoint for ever.
 */
describe('Read-model units (projections leased per read model)', () => {
  it('puts every projection in exactly one unit, in allProjections’ order', () => {
    const units = readModelUnits();
    const placed = units.flatMap((u) => u.projections.map((p) => p.name));
    expect([...placed].sort()).to.deep.equal(allProjections().map((p) => p.name).sort());
    expect(new Set(placed).size).to.equal(placed.length);
    const order = allProjections().map((p) => p.name);
    for (const unit of units) {
      const names = unit.projections.map((p) => p.name);
      expect(names, unit.name).to.deep.equal(order.filter((n) => names.includes(n)));
    }
  });

  it('keeps a projection with the projections whose documents it reads in the same batch', () => {
    const unitOf = (name: string) => readModelUnits().find((u) => u.projections.some((p) => p.name === name))?.name;
    const projection = (prefix: string) => allProjections().find((p) => p.name.startsWith(prefix))!.name;
    expect(unitOf(projection('divergence'))).to.equal(unitOf(projection('reference')));
    expect(unitOf(projection('divergence'))).to.equal(unitOf(projection('daily-scores')));
    expect(unitOf(projection('usage-alerts'))).to.equal(unitOf(projection('api-keys')));
  });
});
