"""CrossQ (Bhatt et al., ICLR 2024) on TD3 and SAC (also on SALE's embeddings), and SimBa
networks on every learner."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl import networks
from jax_rl.algos import common, mpo, sac, sale, td3
from jax_rl.algos.critics import crossq
from jax_rl.core import replay
from jax_rl.core.transition import Transition

B, OBS, A = 8, 3, 2
CROSSQ = {"crossq": True, "hidden_sizes": (16, 16), "adam_beta1": 0.5}
LEARNERS = {"TD3": td3, "SAC": sac}


def batch(key=None) -> Transition:
    key = jax.random.key(0) if key is None else key
    k1, k2, k3 = jax.random.split(key, 3)
    return Transition(
        obs=jax.random.normal(k1, (B, OBS)),
        action=jax.random.uniform(k2, (B, A), minval=-1.0, maxval=1.0),
        reward=jnp.arange(B, dtype=jnp.float32),
        discount=jnp.ones(B),
        next_obs=jax.random.normal(k3, (B, OBS)),
    )


@pytest.mark.parametrize("name", LEARNERS)
def test_crossq_state_has_running_statistics_and_no_target_networks(name):
    algo = LEARNERS[name]
    state = algo.init(jax.random.key(0), OBS, A, algo.Config(**CROSSQ))
    assert state.target_critic_params is None
    assert getattr(state, "target_actor_params", None) is None
    # Two critics, each with its own statistics: a leading ensemble axis.
    means = jax.tree_util.tree_leaves(state.critic_stats)
    assert means and all(leaf.shape[0] == 2 for leaf in means)
    assert state.actor_stats is not None
    plain = algo.init(jax.random.key(0), OBS, A, algo.Config(hidden_sizes=(16, 16)))
    assert plain.target_critic_params is not None and plain.critic_stats is None


@pytest.mark.parametrize("name", LEARNERS)
def test_crossq_critic_sees_the_concatenated_batch_in_one_training_pass(name):
    algo = LEARNERS[name]
    state = algo.init(jax.random.key(0), OBS, A, algo.Config(**CROSSQ))
    calls = []

    def record(next_fun, args, kwargs, context):
        if (
            isinstance(context.module, networks.EnsembleCritic)
            and context.method_name == "__call__"
        ):
            calls.append((args[0].shape, context.module.renorm.train))
        return next_fun(*args, **kwargs)

    with nn.intercept_methods(record):
        loss, (stats, priority) = crossq.loss(
            state.critic_params, algo.SIDE, state, batch(), jax.random.key(1)
        )
    assert priority is None  # uniform replay: no priorities
    assert calls == [((2 * B, OBS), True)]
    assert np.isfinite(float(loss))
    # The pass moved each critic's running mean of its input towards the joint batch's.
    b = batch()
    joint = np.concatenate([np.asarray(b.obs), np.asarray(b.next_obs)])
    first = stats["batch_stats"]["members"]["RenormMLP_0"]["BatchRenorm_0"]
    np.testing.assert_allclose(first["mean"][0][:OBS], 0.01 * joint.mean(axis=0), rtol=1e-4)
    assert int(first["steps"][0]) == 1


def _steps(stats) -> list[int]:
    """The training-pass counters of every BatchRenorm layer in `stats`."""
    return [int(x.ravel()[0]) for x in jax.tree_util.tree_leaves(stats) if x.dtype == jnp.int32]


def _steps(stats) -> list[int]:
    """The training-pass counters of every BatchRenorm layer in `stats`."""
    return [int(x.ravel()[0]) for x in jax.tree_util.tree_leaves(stats) if x.dtype == jnp.int32]


@pytest.mark.parametrize("name", LEARNERS)
def test_crossq_update_writes_statistics_and_acting_reads_them_without_writing(name):
    algo = LEARNERS[name]
    config = algo.Config(**CROSSQ, policy_freq=1)
    state = algo.init(jax.random.key(0), OBS, A, config)
    new, metrics = jax.jit(algo.update)(state, batch(), jax.random.key(2))
    assert all(np.isfinite(float(v)) for v in metrics.values())
    assert set(_steps(new.critic_stats)) == {1} and set(_steps(new.actor_stats)) == {1}
    before = jax.tree_util.tree_map(np.asarray, new.actor_stats)
    a1 = algo.act(new, batch().obs, jax.random.key(3), True)
    a2 = algo.act(new, batch().obs[:1], jax.random.key(3), True)
    # Evaluation mode: a row's action does not depend on the rest of the batch.
    np.testing.assert_allclose(a1[:1], a2, rtol=1e-5, atol=1e-6)
    jax.tree_util.tree_map(np.testing.assert_array_equal, before, new.actor_stats)


def test_sac_policy_delay_updates_actor_and_temperature_every_third_step():
    state = sac.init(jax.random.key(0), OBS, A, sac.Config(**CROSSQ, policy_freq=3))
    update = jax.jit(sac.update)
    actors, alphas = [state.actor_params], [float(state.log_alpha)]
    for i in range(6):
        state, _ = update(state, batch(jax.random.key(i)), jax.random.key(10 + i))
        actors.append(state.actor_params)
        alphas.append(float(state.log_alpha))
    changed = [
        not all(jax.tree_util.tree_leaves(jax.tree_util.tree_map(np.array_equal, a, b)))
        for a, b in zip(actors, actors[1:], strict=False)
    ]
    assert changed == [False, False, True, False, False, True]
    assert [a != b for a, b in zip(alphas, alphas[1:], strict=False)] == changed


def test_adam_beta1_is_the_first_moment_decay():
    state = td3.init(jax.random.key(0), OBS, A, td3.Config(hidden_sizes=(4,), adam_beta1=0.5))
    new, _ = jax.jit(td3.update)(state, batch(), jax.random.key(1))
    mu_before = jax.tree_util.tree_leaves(state.critic_opt_state.mu)
    assert all(float(jnp.abs(m).max()) == 0.0 for m in mu_before)
    grads_mu = jax.tree_util.tree_leaves(new.critic_opt_state.mu)
    nu = jax.tree_util.tree_leaves(new.critic_opt_state.nu)
    # After one step mu = (1 - beta1) g and nu = (1 - beta2) g^2: mu^2 / nu = 0.25 / 0.001.
    for m, v in zip(grads_mu, nu, strict=True):
        mask = np.asarray(v) > 1e-12
        np.testing.assert_allclose(np.asarray(m)[mask] ** 2 / np.asarray(v)[mask], 250.0, rtol=1e-3)


@pytest.mark.parametrize("family", ["simba", "simbav2"])
@pytest.mark.parametrize("algo", [td3, sac, mpo], ids=["TD3", "SAC", "MPO"])
def test_simba_networks_serve_every_learner(algo, family):
    config = algo.Config(
        actor_network=family, critic_network=family, hidden_sizes=(8,), critic_blocks=2,
        actor_blocks=1,
    )  # fmt: skip
    state = algo.init(jax.random.key(0), OBS, A, config)
    second = "SimbaBlock_1" if family == "simba" else "SimbaV2Block_1"
    critic_blocks = [
        k for k in jax.tree_util.tree_leaves_with_path(state.critic_params) if second in str(k[0])
    ]
    actor_blocks = [
        k for k in jax.tree_util.tree_leaves_with_path(state.actor_params) if second in str(k[0])
    ]
    assert critic_blocks and not actor_blocks  # 2 blocks in the critic, 1 in the actor
    new, metrics = jax.jit(algo.update)(state, batch(), jax.random.key(1))
    assert all(np.isfinite(float(v)) for v in metrics.values() if np.ndim(v) == 0)
    assert algo.act(new, batch().obs, jax.random.key(2), False).shape == (B, A)
    assert algo.act(new, batch().obs, jax.random.key(2), True).shape == (B, A)


def hyper_kernels(params):
    """Every HyperDense kernel of a network's parameters, by path."""
    return {
        jax.tree_util.keystr(path): leaf
        for path, leaf in jax.tree_util.tree_leaves_with_path(params)
        if "HyperDense" in jax.tree_util.keystr(path)
    }


@pytest.mark.parametrize("algo", [td3, sac, mpo], ids=["TD3", "SAC", "MPO"])
def test_simbav2_weights_stay_on_the_unit_sphere_after_updates(algo):
    """After every update each HyperDense kernel column (one output unit's weights) has
    norm 1 to 1e-5, in the actor and in every critic of the ensemble, though the
    update moved it."""
    config = algo.Config(
        actor_network="simbav2", critic_network="simbav2", hidden_sizes=(8,), critic_blocks=2,
        actor_lr=0.05, critic_lr=0.05,
    )  # fmt: skip
    state = algo.init(jax.random.key(0), OBS, A, config)
    update = jax.jit(algo.update)
    new = state
    for i in range(3):
        new, _ = update(new, batch(), jax.random.key(i + 1))
    for params, old in (
        (new.actor_params, state.actor_params),
        (new.critic_params, state.critic_params),
    ):
        kernels, before = hyper_kernels(params), hyper_kernels(old)
        assert len(kernels) >= 5
        for path, kernel in kernels.items():
            np.testing.assert_allclose(
                np.linalg.norm(kernel, axis=-2), 1.0, atol=1e-5, err_msg=path
            )
        assert any(not np.allclose(kernels[p], before[p]) for p in kernels)


def test_mpo_simba_critic_scores_many_actions_as_the_tiled_critic():
    critic = networks.Critic((8,), network="simba", blocks=2)
    obs, actions = jnp.ones((3, 4)), jax.random.uniform(jax.random.key(0), (5, 3, 2))
    params = critic.init(jax.random.key(1), obs, actions[0])
    tiled = critic.apply(params, jnp.broadcast_to(obs, (5, 3, 4)), actions)
    np.testing.assert_allclose(networks.critic_many_actions(critic, params, obs, actions), tiled)


def test_batchrenorm_is_a_network_family_that_body_builds():
    x = jax.random.normal(jax.random.key(1), (B, OBS))
    net = networks.body("batchrenorm", (16, 16), 4)
    assert isinstance(net, networks.RenormMLP) and net.renorm == networks.Renorm()
    variables = net.init(jax.random.key(0), x)
    assert set(variables) == {"params", "batch_stats"}  # its running statistics
    # mlp is the plain MLP whatever a Renorm says: the family, not the argument, decides.
    renorm = networks.Renorm(0.9, 10, train=True)
    assert isinstance(networks.body("mlp", (16, 16), 4, renorm=renorm), networks.MLP)
    assert networks.body("batchrenorm", (16, 16), 4, renorm=renorm).renorm is renorm


@pytest.mark.parametrize("name", LEARNERS)
def test_crossq_reads_mlp_as_batchrenorm_and_naming_the_family_trains_the_same_bits(name):
    algo = LEARNERS[name]
    named = {**CROSSQ, "actor_network": "batchrenorm", "critic_network": "batchrenorm"}
    for config in (algo.Config(**CROSSQ), algo.Config(**named)):
        assert common.network_family(config, "actor") == "batchrenorm"
        assert common.network_family(config, "critic") == "batchrenorm"
    plain = algo.Config(hidden_sizes=(16, 16))
    assert common.network_family(plain, "critic") == "mlp" and common.renorm(plain, True) is None
    states = []
    for config in (algo.Config(**CROSSQ), algo.Config(**named)):
        state = algo.init(jax.random.key(0), OBS, A, config)
        for i in range(3):
            state, _ = algo.update(state, batch(jax.random.key(i)), jax.random.key(10 + i))
        states.append(state)
    first, second = (jax.tree_util.tree_leaves(s.replace(config=None)) for s in states)
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", LEARNERS)
def test_batchrenorm_networks_without_the_crossq_recipe_are_refused(name):
    algo = LEARNERS[name]
    with pytest.raises(ValueError, match="critic_network batchrenorm trains with the crossq"):
        algo.init(jax.random.key(0), OBS, A, algo.Config(critic_network="batchrenorm"))
    with pytest.raises(ValueError, match="crossq trains batchrenorm networks: leave critic"):
        algo.init(jax.random.key(0), OBS, A, algo.Config(**CROSSQ, critic_network="simba"))


# CrossQ's critics on SALE's embeddings (`--crossq --representation sale`), at a toy size.
CROSSQ_SALE = {**CROSSQ, "representation": "sale", "encoder_hidden_sizes": (8,),
               "embedding_size": 4}  # fmt: skip


def _critic_input(params, obs, action):
    """[s, z_sa, z_s] by SALE's equations with encoder `params`."""
    zs = sale.state_embedding(params, obs)
    return jnp.concatenate([obs, sale.state_action_embedding(params, zs, action), zs], axis=-1)


@pytest.mark.parametrize("name", LEARNERS)
def test_crossq_with_sale_reads_both_halves_through_the_fixed_encoders(name):
    """The one joint pass sees [x | x'] with x and x' both from the fixed encoders (not the
    fixed target's, TD7's copy for its target critic), and a' is the online actor's at
    [s', z_s(s')] of the same encoders."""
    algo = LEARNERS[name]
    extra = {"policy_noise": 0.0} if algo is td3 else {}  # TD3: a' is then the actor's own
    state = algo.init(jax.random.key(0), OBS, A, algo.Config(**CROSSQ_SALE, **extra))
    params, fixed, target = (
        sale.init_params(jax.random.key(k), OBS, A, (8,), 4) for k in (1, 2, 3)
    )  # three different copies, so that the test tells them apart
    state = state.replace(
        encoders=state.encoders.replace(params=params, fixed=fixed, fixed_target=target)
    )
    b, key = batch(), jax.random.key(4)
    critic_calls, actor_calls = [], []

    def record(next_fun, args, kwargs, context):
        if context.method_name == "__call__":
            if isinstance(context.module, networks.EnsembleCritic):
                critic_calls.append(args[:2])
            elif isinstance(context.module, networks.DeterministicPolicy | networks.GaussianPolicy):
                actor_calls.append(args[0])
        return next_fun(*args, **kwargs)

    with nn.intercept_methods(record):
        loss, _ = crossq.loss(state.critic_params, algo.SIDE, state, b, key)
    assert np.isfinite(float(loss))
    [(joint_in, joint_action)], [actor_in] = critic_calls, actor_calls
    next_action = joint_action[B:]
    np.testing.assert_array_equal(joint_action[:B], b.action)
    zs_next = sale.state_embedding(fixed, b.next_obs)
    np.testing.assert_allclose(actor_in, jnp.concatenate([b.next_obs, zs_next], axis=-1), rtol=1e-6)
    expected = jnp.concatenate(
        [_critic_input(fixed, b.obs, b.action), _critic_input(fixed, b.next_obs, next_action)]
    )
    assert joint_in.shape == (2 * B, OBS + 4 + 4)
    np.testing.assert_allclose(joint_in, expected, rtol=1e-5, atol=1e-6)
    # The fixed target encoders would have given another x': what is checked tells them apart.
    assert not np.allclose(joint_in[B:], _critic_input(target, b.next_obs, next_action))
    if algo is td3:  # the online actor's deterministic action (no target actor, no noise)
        np.testing.assert_allclose(next_action, td3.act(state, b.next_obs, key, True), rtol=1e-6)


def changed(a, b) -> bool:
    return not all(jax.tree_util.tree_leaves(jax.tree_util.tree_map(np.array_equal, a, b)))


@pytest.mark.parametrize("name", LEARNERS)
def test_crossq_with_sale_updates_critics_and_encoders_and_keeps_no_targets(name):
    algo = LEARNERS[name]
    config = algo.Config(**CROSSQ_SALE, policy_freq=1, replay="lap", encoder_every=2)
    state = algo.init(jax.random.key(0), OBS, A, config)
    assert state.target_critic_params is None
    assert getattr(state, "target_actor_params", None) is None
    update = jax.jit(algo.update)
    new = state
    for i in range(2):
        new, metrics = update(new, batch(jax.random.key(i)), jax.random.key(10 + i))
    assert all(np.isfinite(np.asarray(v)).all() for v in metrics.values())
    assert metrics[replay.PRIORITY_KEY].shape == (B,)  # LAP's new priorities
    assert changed(new.critic_params, state.critic_params)
    assert changed(new.actor_params, state.actor_params)
    assert changed(new.encoders.params, state.encoders.params)
    # The swap at update 2: the critics' encoders are now the trained ones.
    assert not changed(new.encoders.fixed, new.encoders.params)
    assert set(_steps(new.critic_stats)) == {2}
    assert new.target_critic_params is None


def test_crossq_with_sale_still_refuses_target_settings():
    with pytest.raises(ValueError, match="target_every does nothing with crossq"):
        td3.Config(**CROSSQ_SALE, target_every=250)
    with pytest.raises(ValueError, match="clip_values takes the scalar critic"):
        td3.Config(**CROSSQ_SALE, clip_values=True)
